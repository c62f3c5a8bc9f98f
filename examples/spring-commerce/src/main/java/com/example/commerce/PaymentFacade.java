package com.example.commerce;

import java.lang.reflect.Method;
import java.util.concurrent.TimeoutException;

import feign.Target;
import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.RetryRegistry;

import org.springframework.cloud.client.circuitbreaker.NoFallbackAvailableException;
import org.springframework.cloud.openfeign.CircuitBreakerNameResolver;
import org.springframework.core.env.Environment;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Service;

/**
 * Pays an order: Retry( Spring Cloud CircuitBreaker( TimeLimiter( Feign call ))).
 *
 * <p>The circuit breaker and the time limiter are Spring Cloud's, around every Feign call; the retry
 * is a Resilience4j Retry around the whole Feign call, so each attempt is one call of the breaker
 * (the field report's second trap). The retry takes its settings from
 * {@code resilience4j.retry.configs.default}, with {@code pg.retry-max-attempts} and
 * {@code pg.retry-wait} on top when they are set, and does not retry a call the open breaker refused unless
 * {@code pg.retry-on-rejection=true}.
 */
@Service
public class PaymentFacade {

	private final PgPaymentClient client;
	private final OrderStore orders;
	private final Database database;
	private final PgProperties pg;
	private final Environment environment;
	private final Retry retry;

	public PaymentFacade(PgPaymentClient client, OrderStore orders, Database database, PgProperties pg,
			Environment environment, RetryRegistry retries, CircuitBreakerNameResolver names) throws NoSuchMethodException {
		this.client = client;
		this.orders = orders;
		this.database = database;
		this.pg = pg;
		this.environment = environment;
		// The retry is named like the breaker Spring Cloud creates for the same Feign method.
		Method method = PgPaymentClient.class.getMethod("requestPayment", String.class, PaymentRequest.class);
		String name = names.resolveCircuitBreakerName("pg",
				new Target.HardCodedTarget<>(PgPaymentClient.class, "pg", pg.baseUrl()), method);
		this.retry = retries.retry(name, retryConfig(retries.getDefaultConfig(), pg));
	}

	static RetryConfig retryConfig(RetryConfig base, PgProperties pg) {
		RetryConfig.Builder<Object> builder = RetryConfig.custom()
			.maxAttempts(pg.retryMaxAttempts() != null ? pg.retryMaxAttempts() : base.getMaxAttempts())
			.failAfterMaxAttempts(base.isFailAfterMaxAttempts())
			.retryOnException(e -> {
				if (find(e, CallNotPermittedException.class) != null && !pg.retryOnRejection()) {
					return false;
				}
				return base.getExceptionPredicate().test(e);
			});
		if (pg.retryWait() != null) {
			builder.waitDuration(pg.retryWait());
		}
		else {
			builder.intervalBiFunction(base.getIntervalBiFunction());
		}
		return builder.build();
	}

	/** What POST /api/v1/payments answers. */
	public record PaymentResult(String orderId, String transactionKey, String status) {
	}

	public PaymentResult pay(String userId, Order order, String cardType, String cardNo) {
		database.transaction();
		orders.update(order.orderId(), o -> o.withStatus(Order.PAYMENT_REQUESTED));
		PaymentRequest request = new PaymentRequest(order.orderId(), cardType, cardNo, order.amount(), callbackUrl());
		PgResponse answer;
		try {
			answer = retry.executeSupplier(() -> client.requestPayment(userId, request));
		}
		catch (RuntimeException e) {
			database.transaction();
			orders.update(order.orderId(), o -> o.withStatus(Order.PAYMENT_FAILED));
			throw failure(e);
		}
		database.transaction();
		String key = answer.data() == null ? null : answer.data().transactionKey();
		String status = answer.data() == null || answer.data().status() == null ? "PENDING" : answer.data().status();
		orders.update(order.orderId(), o -> {
			// A fast callback may have settled the order already.
			Order updated = Order.PAYMENT_REQUESTED.equals(o.status()) ? o.withStatus(Order.PAYMENT_PENDING) : o;
			return updated.withTransaction(key, updated.reason());
		});
		return new PaymentResult(order.orderId(), key, status);
	}

	private String callbackUrl() {
		if (pg.callbackUrl() != null && !pg.callbackUrl().isBlank()) {
			return pg.callbackUrl();
		}
		return "http://localhost:" + environment.getProperty("local.server.port") + "/api/v1/payments/callback";
	}

	/**
	 * The first exception of the given type in e's cause chain, or null. Spring Cloud CircuitBreaker
	 * without a fallback throws NoFallbackAvailableException around what failed, and a call cut by the
	 * TimeLimiter arrives as a CompletionException (thread-pool bulkhead) or ExecutionException around
	 * the TimeoutException.
	 */
	static <T extends Throwable> T find(Throwable e, Class<T> type) {
		for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
			if (type.isInstance(t)) {
				return type.cast(t);
			}
		}
		return null;
	}

	static ApiException failure(RuntimeException e) {
		CallNotPermittedException rejected = find(e, CallNotPermittedException.class);
		if (rejected != null) {
			return new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "CIRCUIT_OPEN", rejected.getMessage());
		}
		TimeoutException timeout = find(e, TimeoutException.class);
		if (timeout != null) {
			return new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "PG_TIMEOUT",
					"payment gateway timed out: " + timeout.getMessage());
		}
		Throwable cause = e instanceof NoFallbackAvailableException && e.getCause() != null ? e.getCause() : e;
		return new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "PG_ERROR", "payment gateway failed: " + cause.getMessage());
	}
}
