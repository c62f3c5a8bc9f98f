package io.cbprobe.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Replays cbprobe's conformance vectors on the released Resilience4j jars.
 *
 * <pre>
 * java -jar r4j-conformance.jar verify PATH...   check every step's expect (exit 1 on a mismatch)
 * java -jar r4j-conformance.jar record PATH...   write every step's expect from the library
 * </pre>
 *
 * A PATH is a vector file or a folder whose *.json files are taken in name order. One JVM runs
 * all of them. Exit codes: 0 all match, 1 a step differs, 2 unreadable or malformed input.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length < 2 || !(args[0].equals("verify") || args[0].equals("record"))) {
            err.println("usage: r4j-conformance verify|record PATH...  (a vector file or a folder of *.json vectors)");
            return 2;
        }
        boolean record = args[0].equals("record");
        long start = System.nanoTime();
        List<Path> files = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            Path p = Path.of(args[i]);
            if (Files.isDirectory(p)) {
                List<Path> in = new ArrayList<>();
                try (DirectoryStream<Path> ds = Files.newDirectoryStream(p, "*.json")) {
                    ds.forEach(in::add);
                } catch (IOException e) {
                    err.println(p + ": cannot read folder: " + e.getMessage());
                    return 2;
                }
                if (in.isEmpty()) {
                    err.println(p + ": folder holds no *.json vector files");
                    return 2;
                }
                Collections.sort(in);
                files.addAll(in);
            } else if (Files.isRegularFile(p)) {
                files.add(p);
            } else {
                err.println(p + ": no such vector file or folder");
                return 2;
            }
        }
        Replayers replayers = new Replayers();
        int matched = 0, steps = 0, malformed = 0, mismatched = 0;
        for (Path f : files) {
            String text;
            ObjectNode v;
            try {
                text = Files.readString(f, StandardCharsets.UTF_8);
                JsonNode n = Json.MAPPER.readTree(text);
                if (n == null || !n.isObject() || !n.path("steps").isArray()) {
                    throw new IOException("not a vector object with a \"steps\" array");
                }
                v = (ObjectNode) n;
            } catch (IOException e) {
                err.println(f + ": cannot read vector: " + e.getMessage());
                malformed++;
                continue;
            }
            String kind = v.path("kind").asText("circuitbreaker");
            Replayer r = replayers.forKind(kind);
            if (r == null) {
                err.println(f + ": kind: unknown vector kind \"" + kind + "\" (want circuitbreaker, retry or timelimiter)");
                malformed++;
                continue;
            }
            List<JsonNode> got;
            try {
                got = r.run(v);
            } catch (VectorException e) {
                err.println(f + (e.step > 0 ? ": step " + e.step : "") + ": " + e.getMessage());
                malformed++;
                continue;
            }
            ArrayNode stepNodes = (ArrayNode) v.get("steps");
            steps += stepNodes.size();
            int firstLine = firstStepLine(text);
            boolean ok = true;
            for (int i = 0; i < stepNodes.size(); i++) {
                ObjectNode s = (ObjectNode) stepNodes.get(i);
                List<String> diffs = new ArrayList<>();
                Json.diff("", s.get("expect"), got.get(i), diffs);
                if (diffs.isEmpty()) {
                    continue;
                }
                String op = s.path("op").asText();
                if (record && !r.checkedOnly(op)) {
                    s.set("expect", got.get(i));
                    continue;
                }
                ok = false;
                String where = f + (firstLine > 0 ? ":" + (firstLine + i) : "") + ": step " + (i + 1) + " (" + describe(s) + "): ";
                for (String d : diffs) {
                    out.println(where + d);
                }
            }
            if (record && ok) {
                try {
                    Files.writeString(f, Json.vectorText(v), StandardCharsets.UTF_8);
                } catch (IOException e) {
                    err.println(f + ": cannot write: " + e.getMessage());
                    return 2;
                }
            }
            if (ok) {
                matched++;
            } else {
                mismatched++;
            }
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        int total = files.size();
        out.printf("%d/%d vectors %s (%d steps) in %d ms%n", matched, total, record ? "recorded" : "match", steps, ms);
        if (malformed > 0) {
            return 2;
        }
        return mismatched > 0 ? 1 : 0;
    }

    /** The 1-based line of the first step when the file is written one step a line, else 0. */
    private static int firstStepLine(String text) {
        String[] lines = text.split("\n", -1);
        for (int i = 0; i + 1 < lines.length; i++) {
            if (lines[i].trim().startsWith("\"steps\"") && lines[i].trim().endsWith("[")
                && lines[i + 1].trim().startsWith("{")) {
                return i + 2;
            }
        }
        return 0;
    }

    /** "call failure 20ms", "acquire a1", "transition OPEN", "execute [IOException, success]"... */
    static String describe(JsonNode s) {
        StringBuilder b = new StringBuilder(s.path("op").asText());
        for (String k : new String[] {"id", "outcome", "duration_ms", "to", "attempts", "attempt", "samples"}) {
            JsonNode n = s.get(k);
            if (n == null) {
                continue;
            }
            b.append(' ').append(n.isTextual() ? n.asText() : Json.compact(n));
            if (k.equals("duration_ms")) {
                b.append("ms");
            }
        }
        return b.toString();
    }
}
