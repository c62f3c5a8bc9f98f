package com.example.commerce;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * One order. Status moves CREATED → PAYMENT_REQUESTED → PAYMENT_PENDING → PAID, or to PAYMENT_FAILED.
 *
 * @param amount amount in won
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Order(String orderId, String userId, long amount, String status, String transactionKey, String reason) {

	public static final String CREATED = "CREATED";
	public static final String PAYMENT_REQUESTED = "PAYMENT_REQUESTED";
	public static final String PAYMENT_PENDING = "PAYMENT_PENDING";
	public static final String PAID = "PAID";
	public static final String PAYMENT_FAILED = "PAYMENT_FAILED";

	Order withStatus(String newStatus) {
		return new Order(orderId, userId, amount, newStatus, transactionKey, reason);
	}

	Order withTransaction(String newKey, String newReason) {
		return new Order(orderId, userId, amount, status, newKey, newReason);
	}
}
