package com.example.commerce;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;

import feign.RequestTemplate;
import org.junit.jupiter.api.Test;

class PaymentRequestIdTest {

	@Test
	void theOrderIdBecomesTheRequestId() {
		RequestTemplate template = new RequestTemplate();
		template.body("{\"orderId\":\"ORD-00000042\",\"cardType\":\"KB\"}".getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);
		new PaymentRequestId().apply(template);
		assertThat(template.headers().get("X-Request-Id")).containsExactly("ORD-00000042");
	}

	@Test
	void aCallWithoutOrderIdGetsNoHeader() {
		RequestTemplate template = new RequestTemplate();
		new PaymentRequestId().apply(template);
		assertThat(template.headers()).doesNotContainKey("X-Request-Id");
	}
}
