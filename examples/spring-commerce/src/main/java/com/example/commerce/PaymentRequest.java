package com.example.commerce;

/** The gateway's POST /api/v1/payments body. */
public record PaymentRequest(String orderId, String cardType, String cardNo, long amount, String callbackUrl) {
}
