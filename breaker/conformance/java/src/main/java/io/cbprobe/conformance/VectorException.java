package io.cbprobe.conformance;

/** A fault in a vector file (exit code 2): the file, the 1-based step (0: none) and what is wrong. */
final class VectorException extends Exception {
    final int step;

    VectorException(int step, String message) {
        super(message);
        this.step = step;
    }

    VectorException(int step, String message, Throwable cause) {
        super(message, cause);
        this.step = step;
    }
}
