package com.example.commerce;

import org.springframework.http.HttpStatus;

/** A request the API refuses or a payment that failed: rendered as {@link ApiError} with its status. */
public class ApiException extends RuntimeException {

	private final HttpStatus status;
	private final String code;

	public ApiException(HttpStatus status, String code, String message) {
		super(message);
		this.status = status;
		this.code = code;
	}

	public static ApiException badRequest(String message) {
		return new ApiException(HttpStatus.BAD_REQUEST, "BAD_REQUEST", message);
	}

	public static ApiException notFound(String message) {
		return new ApiException(HttpStatus.NOT_FOUND, "NOT_FOUND", message);
	}

	public HttpStatus status() {
		return status;
	}

	public ApiError body() {
		return new ApiError(code, getMessage());
	}
}
