package com.example.commerce;

import java.util.Map;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** POST /api/v1/orders {"amount":5000} → {"orderId":"ORD-00000001"}; GET /api/v1/orders/{orderId}. */
@RestController
@RequestMapping("/api/v1/orders")
public class OrderController {

	private final OrderStore orders;
	private final Database database;

	public OrderController(OrderStore orders, Database database) {
		this.orders = orders;
		this.database = database;
	}

	/** The order request; amount is in won. */
	public record CreateOrder(Long amount) {
	}

	@PostMapping
	public Map<String, String> create(@RequestHeader(name = "X-USER-ID", required = false) String userId,
			@RequestBody CreateOrder request) {
		if (userId == null || userId.isBlank()) {
			throw ApiException.badRequest("header X-USER-ID is required");
		}
		if (request.amount() == null) {
			throw ApiException.badRequest("field amount is required");
		}
		if (request.amount() <= 0) {
			throw ApiException.badRequest("amount " + request.amount() + ": want a whole number > 0");
		}
		database.transaction();
		Order order = orders.create(userId.trim(), request.amount());
		return Map.of("orderId", order.orderId());
	}

	@GetMapping("/{orderId}")
	public Order get(@RequestHeader(name = "X-USER-ID", required = false) String userId, @PathVariable String orderId) {
		return orders.find(orderId, userId == null ? null : userId.trim())
			.orElseThrow(() -> ApiException.notFound("order \"" + orderId + "\" not found"));
	}
}
