package com.example.commerce;

import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * POST /api/v1/payments {"orderId","cardType","cardNo"} pays an order through the gateway (200, or 503
 * with code CIRCUIT_OPEN, PG_TIMEOUT or PG_ERROR); POST /api/v1/payments/callback takes the gateway's
 * settlement.
 */
@RestController
@RequestMapping("/api/v1/payments")
public class PaymentController {

	private static final Set<String> CARD_TYPES = Set.of("SAMSUNG", "KB", "HYUNDAI");
	private static final Pattern CARD_NO = Pattern.compile("^\\d{4}-\\d{4}-\\d{4}-\\d{4}$");
	private static final Set<String> SETTLEMENTS = Set.of("SUCCESS", "FAILED", "PENDING");

	private final OrderStore orders;
	private final PaymentFacade payments;

	public PaymentController(OrderStore orders, PaymentFacade payments) {
		this.orders = orders;
		this.payments = payments;
	}

	/** The payment request of a user. */
	public record PayRequest(String orderId, String cardType, String cardNo) {
	}

	/** The gateway's callback (TransactionInfo). */
	public record TransactionInfo(String transactionKey, String orderId, String cardType, String cardNo, Long amount,
			String status, String reason) {
	}

	@PostMapping
	public PaymentFacade.PaymentResult pay(@RequestHeader(name = "X-USER-ID", required = false) String userId,
			@RequestBody PayRequest request) {
		if (userId == null || userId.isBlank()) {
			throw ApiException.badRequest("header X-USER-ID is required");
		}
		if (request.orderId() == null || request.orderId().isEmpty()) {
			throw ApiException.badRequest("field orderId is required");
		}
		if (!CARD_TYPES.contains(request.cardType())) {
			throw ApiException.badRequest("cardType \"" + request.cardType() + "\": want SAMSUNG, KB or HYUNDAI");
		}
		if (request.cardNo() == null || !CARD_NO.matcher(request.cardNo()).matches()) {
			throw ApiException.badRequest("cardNo \"" + request.cardNo() + "\": want xxxx-xxxx-xxxx-xxxx");
		}
		String user = userId.trim();
		Order order = orders.find(request.orderId(), user)
			.orElseThrow(() -> ApiException.notFound("order \"" + request.orderId() + "\" not found"));
		return payments.pay(user, order, request.cardType(), request.cardNo());
	}

	@PostMapping("/callback")
	public Map<String, String> callback(@RequestBody TransactionInfo info) {
		if (info.orderId() == null || info.orderId().isEmpty() || !SETTLEMENTS.contains(info.status())) {
			throw ApiException.badRequest("callback needs orderId and status SUCCESS, FAILED or PENDING");
		}
		Order settled = orders.update(info.orderId(), order -> {
			String status = switch (info.status()) {
				case "SUCCESS" -> Order.PAID;
				case "FAILED" -> Order.PAYMENT_FAILED;
				default -> order.status();
			};
			String key = info.transactionKey() == null || info.transactionKey().isEmpty()
					? order.transactionKey() : info.transactionKey();
			return order.withStatus(status).withTransaction(key, info.reason());
		}).orElseThrow(() -> ApiException.notFound("order \"" + info.orderId() + "\" not found"));
		return Map.of("orderId", settled.orderId(), "status", settled.status());
	}
}
