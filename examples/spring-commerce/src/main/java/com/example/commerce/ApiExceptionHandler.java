package com.example.commerce;

import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** Renders the API's errors as {"code","message"}; everything else keeps Spring Boot's error body. */
@RestControllerAdvice
public class ApiExceptionHandler {

	@ExceptionHandler(ApiException.class)
	ResponseEntity<ApiError> api(ApiException e) {
		return ResponseEntity.status(e.status()).body(e.body());
	}

	@ExceptionHandler(HttpMessageNotReadableException.class)
	ResponseEntity<ApiError> unreadable(HttpMessageNotReadableException e) {
		return ResponseEntity.badRequest()
			.body(new ApiError("BAD_REQUEST", "body is not the expected JSON object: " + e.getMostSpecificCause().getMessage()));
	}
}
