package com.example.commerce;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;

import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.retry.RetryConfig;
import org.junit.jupiter.api.Test;

import org.springframework.cloud.client.circuitbreaker.NoFallbackAvailableException;

class PaymentFacadeTest {

	private static PgProperties pg(Integer attempts, Duration wait, boolean retryOnRejection) {
		return new PgProperties("http://127.0.0.1:8082", null, attempts, wait, retryOnRejection);
	}

	private static RuntimeException rejected() {
		CircuitBreaker open = CircuitBreaker.ofDefaults("pg");
		open.transitionToOpenState();
		return new NoFallbackAvailableException("No fallback available.", CallNotPermittedException.createCallNotPermittedException(open));
	}

	@Test
	void retryTakesAttemptsAndWaitFromPgKeys() {
		RetryConfig config = PaymentFacade.retryConfig(RetryConfig.ofDefaults(), pg(1, Duration.ofMillis(20), false));
		assertThat(config.getMaxAttempts()).isEqualTo(1);
		assertThat(config.getIntervalBiFunction().apply(1, null)).isEqualTo(20L);
	}

	@Test
	void retryKeepsTheConfiguredAttemptsWhenPgRetryMaxAttemptsIsUnset() {
		RetryConfig base = RetryConfig.custom().maxAttempts(5).build();
		assertThat(PaymentFacade.retryConfig(base, pg(null, null, false)).getMaxAttempts()).isEqualTo(5);
		assertThat(PaymentFacade.retryConfig(base, pg(2, null, false)).getMaxAttempts()).isEqualTo(2);
	}

	@Test
	void retryKeepsTheConfiguredWaitWhenPgRetryWaitIsUnset() {
		RetryConfig base = RetryConfig.custom().waitDuration(Duration.ofMillis(500)).build();
		RetryConfig config = PaymentFacade.retryConfig(base, pg(3, null, false));
		assertThat(config.getIntervalBiFunction().apply(1, null)).isEqualTo(500L);
	}

	@Test
	void rejectionByTheOpenBreakerIsNotRetriedUnlessAskedFor() {
		RetryConfig noRetry = PaymentFacade.retryConfig(RetryConfig.ofDefaults(), pg(3, null, false));
		RetryConfig retry = PaymentFacade.retryConfig(RetryConfig.ofDefaults(), pg(3, null, true));
		assertThat(noRetry.getExceptionPredicate().test(rejected())).isFalse();
		assertThat(retry.getExceptionPredicate().test(rejected())).isTrue();
		assertThat(noRetry.getExceptionPredicate().test(new NoFallbackAvailableException("No fallback available.",
				new TimeoutException("TimeLimiter 'pg' recorded a timeout exception.")))).isTrue();
	}

	@Test
	void failuresMapToTheApiCodes() {
		assertThat(PaymentFacade.failure(rejected()).body().code()).isEqualTo("CIRCUIT_OPEN");
		assertThat(PaymentFacade.failure(new NoFallbackAvailableException("No fallback available.",
				new TimeoutException("TimeLimiter 'pg' recorded a timeout exception."))).body().code()).isEqualTo("PG_TIMEOUT");
		// Through the thread-pool bulkhead, the timeout arrives inside a CompletionException.
		assertThat(PaymentFacade.failure(new NoFallbackAvailableException("No fallback available.",
				new CompletionException(new TimeoutException("TimeLimiter 'pg' recorded a timeout exception.")))).body().code())
			.isEqualTo("PG_TIMEOUT");
		assertThat(PaymentFacade.failure(new IllegalStateException("boom")).body().code()).isEqualTo("PG_ERROR");
		assertThat(PaymentFacade.failure(rejected()).status().value()).isEqualTo(503);
	}
}
