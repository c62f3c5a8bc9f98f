package com.example.commerce;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

import org.springframework.stereotype.Component;

/** Orders in memory (the field report's service keeps them in MySQL; the payment path is what matters here). */
@Component
public class OrderStore {

	private final AtomicLong sequence = new AtomicLong();
	private final Map<String, Order> orders = new ConcurrentHashMap<>();

	public Order create(String userId, long amount) {
		String id = "ORD-%08d".formatted(sequence.incrementAndGet());
		Order order = new Order(id, userId, amount, Order.CREATED, null, null);
		orders.put(id, order);
		return order;
	}

	/** The order, if it exists and belongs to userId (null or blank matches any owner). */
	public Optional<Order> find(String orderId, String userId) {
		Order order = orders.get(orderId);
		if (order == null || (userId != null && !userId.isBlank() && !order.userId().equals(userId))) {
			return Optional.empty();
		}
		return Optional.of(order);
	}

	public Optional<Order> update(String orderId, UnaryOperator<Order> change) {
		return Optional.ofNullable(orders.computeIfPresent(orderId, (id, order) -> change.apply(order)));
	}
}
