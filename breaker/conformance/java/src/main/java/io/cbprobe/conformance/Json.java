package io.cbprobe.conformance;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.FloatNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;

/** Reading, writing and comparing vectors in the format of shared/conformance/README.md. */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper()
        .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
        .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY);
    static final JsonNodeFactory F = JsonNodeFactory.withExactBigDecimals(true);
    /** Largest difference allowed between two numbers (the README's float rule). */
    static final double TOLERANCE = 1e-4;

    private Json() {
    }

    static ObjectNode object() {
        return F.objectNode();
    }

    static ArrayNode array() {
        return F.arrayNode();
    }

    /** A Java float written as Float.toString writes it. */
    static JsonNode rate(float f) {
        return FloatNode.valueOf(f);
    }

    /** Spring's simple duration: "100ms", "10s" or a bare integer (string or number) of ms. */
    static Duration duration(JsonNode n, String key, int step) throws VectorException {
        if (n.isIntegralNumber()) {
            return Duration.ofMillis(n.longValue());
        }
        String s = n.asText();
        try {
            if (s.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
            }
            if (s.endsWith("s")) {
                return Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)));
            }
            return Duration.ofMillis(Long.parseLong(s));
        } catch (NumberFormatException e) {
            throw new VectorException(step, key + ": duration " + n + " is not an integer followed by ms or s");
        }
    }

    /** One line of compact JSON with ", " and ": " separators, as the vector files are written. */
    static String compact(JsonNode n) {
        StringBuilder b = new StringBuilder();
        write(b, n);
        return b.toString();
    }

    private static void write(StringBuilder b, JsonNode n) {
        if (n.isObject()) {
            b.append('{');
            Iterator<Map.Entry<String, JsonNode>> it = n.fields();
            boolean first = true;
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!first) {
                    b.append(", ");
                }
                first = false;
                b.append(quote(e.getKey())).append(": ");
                write(b, e.getValue());
            }
            b.append('}');
        } else if (n.isArray()) {
            b.append('[');
            for (int i = 0; i < n.size(); i++) {
                if (i > 0) {
                    b.append(", ");
                }
                write(b, n.get(i));
            }
            b.append(']');
        } else if (n.isFloat()) {
            b.append(Float.toString(n.floatValue()));
        } else if (n.isBigDecimal()) {
            b.append(n.decimalValue().toPlainString());
        } else {
            b.append(n.toString());
        }
    }

    private static String quote(String s) {
        try {
            return MAPPER.writeValueAsString(s);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The whole vector: header fields one per line, config keys one per line, one step a line. */
    static String vectorText(ObjectNode v) {
        StringBuilder b = new StringBuilder("{\n");
        Iterator<Map.Entry<String, JsonNode>> it = v.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            b.append("  ").append(quote(e.getKey())).append(": ");
            JsonNode val = e.getValue();
            if (e.getKey().equals("config") && val.size() > 0) {
                b.append("{\n");
                Iterator<Map.Entry<String, JsonNode>> c = val.fields();
                while (c.hasNext()) {
                    Map.Entry<String, JsonNode> ce = c.next();
                    b.append("    ").append(quote(ce.getKey())).append(": ").append(compact(ce.getValue()));
                    b.append(c.hasNext() ? ",\n" : "\n");
                }
                b.append("  }");
            } else if (e.getKey().equals("steps")) {
                b.append("[\n");
                for (int i = 0; i < val.size(); i++) {
                    b.append("    ").append(compact(val.get(i)));
                    b.append(i + 1 < val.size() ? ",\n" : "\n");
                }
                b.append("  ]");
            } else {
                b.append(compact(val));
            }
            b.append(it.hasNext() ? ",\n" : "\n");
        }
        return b.append("}\n").toString();
    }

    /**
     * Appends to out one "field: want W, got G" line for each difference between want and got.
     * Numbers are equal within TOLERANCE; arrays are compared whole.
     */
    static void diff(String path, JsonNode want, JsonNode got, java.util.List<String> out) {
        if (want == null || want.isMissingNode()) {
            want = F.missingNode();
        }
        if (got == null || got.isMissingNode()) {
            got = F.missingNode();
        }
        if (want.isObject() && got.isObject()) {
            java.util.Set<String> keys = new java.util.LinkedHashSet<>();
            want.fieldNames().forEachRemaining(keys::add);
            got.fieldNames().forEachRemaining(keys::add);
            for (String k : keys) {
                diff(path.isEmpty() ? k : path + "." + k, want.get(k), got.get(k), out);
            }
            return;
        }
        if (!same(want, got)) {
            out.add(path + ": want " + show(want) + ", got " + show(got));
        }
    }

    private static String show(JsonNode n) {
        return n.isMissingNode() ? "(absent)" : compact(n);
    }

    private static boolean same(JsonNode a, JsonNode b) {
        if (a.isNumber() && b.isNumber()) {
            return Math.abs(a.doubleValue() - b.doubleValue()) <= TOLERANCE;
        }
        if (a.isArray() && b.isArray()) {
            if (a.size() != b.size()) {
                return false;
            }
            for (int i = 0; i < a.size(); i++) {
                if (!same(a.get(i), b.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a.isObject() && b.isObject()) {
            if (a.size() != b.size()) {
                return false;
            }
            Iterator<String> it = a.fieldNames();
            while (it.hasNext()) {
                String k = it.next();
                if (!b.has(k) || !same(a.get(k), b.get(k))) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }
}
