package com.example.commerce;

import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import feign.RequestInterceptor;
import feign.RequestTemplate;

import org.springframework.stereotype.Component;

/**
 * Sends each payment call with {@code X-Request-Id: <orderId>}, the same on every retry of one
 * payment, so a proxy in front of the gateway ({@code cbprobe fault}) can count the attempts of
 * each payment. It reads the id from the body rather than taking a parameter: a parameter would
 * change the Feign method's signature and so the breaker's name. With Micrometer Tracing,
 * {@code traceparent} carries a trace id that serves the same purpose.
 */
@Component
class PaymentRequestId implements RequestInterceptor {

	private static final Pattern ORDER_ID = Pattern.compile("\"orderId\"\\s*:\\s*\"([^\"]+)\"");

	@Override
	public void apply(RequestTemplate template) {
		byte[] body = template.body();
		if (body == null) {
			return;
		}
		Matcher orderId = ORDER_ID.matcher(new String(body, StandardCharsets.UTF_8));
		if (orderId.find()) {
			template.header("X-Request-Id", orderId.group(1));
		}
	}
}
