package io.cbprobe.conformance;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/** A java.time.Clock that moves only when the replayer moves it. */
final class FakeClock extends Clock {
    private Instant now;

    FakeClock(Instant start) {
        this.now = start;
    }

    void set(Instant t) {
        now = t;
    }

    @Override
    public Instant instant() {
        return now;
    }

    @Override
    public long millis() {
        return now.toEpochMilli();
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }
}
