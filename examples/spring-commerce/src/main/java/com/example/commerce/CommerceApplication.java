package com.example.commerce;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;
import org.springframework.cloud.openfeign.EnableFeignClients;

/**
 * The field report's commerce-api, reduced to the payment path: orders, and payments through
 * the payment gateway behind Retry( Spring Cloud CircuitBreaker( TimeLimiter( Feign call ))).
 */
@SpringBootApplication
@EnableFeignClients
@ConfigurationPropertiesScan
public class CommerceApplication {

	public static void main(String[] args) {
		SpringApplication.run(CommerceApplication.class, args);
	}
}
