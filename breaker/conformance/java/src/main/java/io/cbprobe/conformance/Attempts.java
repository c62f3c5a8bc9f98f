package io.cbprobe.conformance;

import com.fasterxml.jackson.databind.JsonNode;

/** The outcome words of retry and time-limiter vectors. */
final class Attempts {
    private Attempts() {
    }

    /**
     * An exception of the named class, built with its no-argument constructor: the outcome
     * words other than "success" and "result:X" are fully qualified Java exception class names.
     */
    static Exception exception(String className, int step) throws VectorException {
        try {
            Class<?> c = Class.forName(className);
            if (!Exception.class.isAssignableFrom(c)) {
                throw new VectorException(step, "\"" + className + "\" is not an Exception class");
            }
            return (Exception) c.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new VectorException(step, "\"" + className + "\" is not an exception class with a no-argument constructor", e);
        }
    }

    /** Classes named by a config list, e.g. retry-exceptions. */
    @SuppressWarnings("unchecked")
    static Class<? extends Throwable>[] classes(JsonNode list, String key) throws VectorException {
        if (!list.isArray()) {
            throw new VectorException(0, "config: " + key + " must be a list of class names");
        }
        Class<? extends Throwable>[] out = new Class[list.size()];
        for (int i = 0; i < list.size(); i++) {
            try {
                Class<?> c = Class.forName(list.get(i).asText());
                if (!Throwable.class.isAssignableFrom(c)) {
                    throw new VectorException(0, "config: " + key + ": " + c.getName() + " is not a Throwable");
                }
                out[i] = (Class<? extends Throwable>) c;
            } catch (ClassNotFoundException e) {
                throw new VectorException(0, "config: " + key + ": no class " + list.get(i));
            }
        }
        return out;
    }
}
