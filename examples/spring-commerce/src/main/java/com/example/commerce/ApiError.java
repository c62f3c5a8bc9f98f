package com.example.commerce;

/** The API's error body: {"code":"PG_ERROR","message":"…"}. */
public record ApiError(String code, String message) {
}
