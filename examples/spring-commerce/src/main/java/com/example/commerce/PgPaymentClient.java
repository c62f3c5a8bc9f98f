package com.example.commerce;

import org.springframework.cloud.openfeign.FeignClient;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;

/**
 * The payment gateway (pg-simulator API). With spring.cloud.openfeign.circuitbreaker.enabled=true
 * every call runs in a Spring Cloud CircuitBreaker named after the method by Spring Cloud itself:
 * {@code PgPaymentClient#requestPayment(String,PaymentRequest)} with alphanumeric ids disabled,
 * {@code PgPaymentClientrequestPaymentStringPaymentRequest} with the default.
 */
@FeignClient(name = "pg", url = "${pg.base-url}")
public interface PgPaymentClient {

	@PostMapping("/api/v1/payments")
	PgResponse requestPayment(@RequestHeader("X-USER-ID") String userId, @RequestBody PaymentRequest request);
}
