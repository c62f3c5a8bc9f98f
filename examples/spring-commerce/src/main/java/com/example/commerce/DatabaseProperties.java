package com.example.commerce;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The simulated database work of each transaction ({@code demo.db-latency}, the key cbprobe's
 * demo reads). The example has no database; it holds one of
 * {@code spring.datasource.hikari.maximum-pool-size} permits for this long instead.
 *
 * @param dbLatency time one transaction holds a pool connection (0 turns the simulation off)
 */
@ConfigurationProperties("demo")
public record DatabaseProperties(@DefaultValue("3ms") Duration dbLatency) {
}
