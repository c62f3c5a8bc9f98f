package com.example.commerce;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The {@code pg.*} settings of the payment gateway call (the same keys cbprobe's demo reads).
 *
 * @param baseUrl gateway base URL, e.g. {@code http://127.0.0.1:8082} (used by {@link PgPaymentClient})
 * @param callbackUrl callbackUrl sent to the gateway; empty means
 *     {@code http://localhost:<server port>/api/v1/payments/callback}
 * @param retryMaxAttempts Retry max attempts for the payment call, counting the first call; unset keeps
 *     the retry config's own {@code max-attempts}
 * @param retryWait fixed wait between attempts; empty keeps the retry config's own wait
 * @param retryOnRejection whether a call refused by the open breaker is retried
 */
@ConfigurationProperties("pg")
public record PgProperties(
		@DefaultValue("http://127.0.0.1:8082") String baseUrl,
		String callbackUrl,
		Integer retryMaxAttempts,
		Duration retryWait,
		@DefaultValue("false") boolean retryOnRejection) {

	public PgProperties {
		if (retryMaxAttempts != null && retryMaxAttempts < 1) {
			throw new IllegalArgumentException("pg.retry-max-attempts must be >= 1, was " + retryMaxAttempts);
		}
		if (retryWait != null && retryWait.isNegative()) {
			throw new IllegalArgumentException("pg.retry-wait must not be negative, was " + retryWait);
		}
	}
}
