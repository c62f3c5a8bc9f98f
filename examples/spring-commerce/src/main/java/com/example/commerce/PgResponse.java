package com.example.commerce;

/** The gateway's envelope: {"meta":{"result":"SUCCESS"},"data":{"transactionKey":…,"status":"PENDING"}}. */
public record PgResponse(Meta meta, Transaction data) {

	/** result is SUCCESS or FAIL; errorCode and message only on FAIL. */
	public record Meta(String result, String errorCode, String message) {
	}

	/** The accepted transaction. */
	public record Transaction(String transactionKey, String status, String reason) {
	}
}
