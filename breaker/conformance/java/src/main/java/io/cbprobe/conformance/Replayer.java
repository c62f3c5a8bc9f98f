package io.cbprobe.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.util.List;

/** Replays one kind of vector on the released Resilience4j. */
interface Replayer {
    /** t0 of every vector: epoch 1,700,000,000,000 ms. */
    Instant T0 = Instant.ofEpochMilli(1_700_000_000_000L);

    /**
     * Runs every step of v and returns, for each step, the expect block the library produced.
     * A step whose expect is a checked range (wait-range) returns its own expect when every
     * sample lies in it, and the observed extremes otherwise.
     */
    List<JsonNode> run(ObjectNode v) throws VectorException;

    /** The ops whose expect record mode must not overwrite with observed values. */
    default boolean checkedOnly(String op) {
        return false;
    }
}
