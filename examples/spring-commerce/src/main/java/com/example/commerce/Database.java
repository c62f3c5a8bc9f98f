package com.example.commerce;

import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/** Simulated database transactions: a pool of connections, each held for demo.db-latency. */
@Component
public class Database {

	private final Semaphore pool;
	private final Duration latency;

	public Database(DatabaseProperties properties,
			@Value("${spring.datasource.hikari.maximum-pool-size:10}") int poolSize) {
		this.pool = new Semaphore(poolSize, true);
		this.latency = properties.dbLatency();
	}

	/** Runs one transaction's worth of database work. */
	public void transaction() {
		if (latency.isZero() || latency.isNegative()) {
			return;
		}
		try {
			pool.acquire();
			try {
				TimeUnit.NANOSECONDS.sleep(latency.toNanos());
			}
			finally {
				pool.release();
			}
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("database transaction interrupted", e);
		}
	}
}
