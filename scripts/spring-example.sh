#!/usr/bin/env bash
# Builds examples/spring-commerce on both Spring generations:
#   examples/spring-commerce/target/spring-commerce-boot3.jar  (Boot 3.5.7, Spring Cloud 2025.0.0)
#   examples/spring-commerce/target/spring-commerce-boot4.jar  (Boot 4.0.7, Spring Cloud 2025.1.4, -Pboot4)
# Uses the system mvn (no wrapper). Offline first when ~/.m2 already holds what the build needs,
# online (Maven Central) otherwise. A jar newer than every source file is not rebuilt
# (FORCE=1 rebuilds). Fails with what to install when java or mvn is missing.
set -euo pipefail
cd "$(dirname "$0")/../examples/spring-commerce"

missing=()
command -v java >/dev/null 2>&1 || missing+=("java (a JDK 17 or newer: apt-get install openjdk-17-jdk-headless)")
command -v mvn >/dev/null 2>&1 || missing+=("mvn (Apache Maven 3.8 or newer: apt-get install maven)")
if [ ${#missing[@]} -gt 0 ]; then
	echo "spring-example: cannot build examples/spring-commerce: missing ${missing[*]}" >&2
	exit 1
fi
jv=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
if [ -z "$jv" ] || [ "${jv%%.*}" -lt 17 ]; then
	echo "spring-example: java $jv is too old: the example needs a JDK 17 or newer (apt-get install openjdk-17-jdk-headless)" >&2
	exit 1
fi

# up_to_date JAR: the jar exists and is newer than the POM and every source file.
up_to_date() {
	[ -f "$1" ] || return 1
	[ -z "$(find pom.xml src -newer "$1" -print -quit)" ]
}

build() { # build GENERATION [MAVEN ARGS...]
	local gen=$1
	shift
	local jar="target/spring-commerce-$gen.jar"
	if [ "${FORCE:-0}" != 1 ] && up_to_date "$jar"; then
		echo "spring-example: $jar is up to date"
		return 0
	fi
	local start=$SECONDS log="target/build-$gen.log"
	mkdir -p target
	echo "spring-example: building $jar"
	if ! mvn -B -ntp -o "$@" package >"$log" 2>&1; then
		if ! mvn -B -ntp "$@" package >"$log" 2>&1; then
			tail -n 60 "$log" >&2
			echo "spring-example: mvn $* package failed; full log: examples/spring-commerce/$log" >&2
			return 1
		fi
	fi
	echo "spring-example: built $jar in $((SECONDS - start)) s"
}

build boot3
build boot4 -Pboot4
