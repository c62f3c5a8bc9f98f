#!/usr/bin/env bash
# Replays the conformance vectors on the released Resilience4j 2.4.0 jars
# (breaker/conformance/java, built with the system mvn, no wrapper):
#   scripts/conformance-java.sh                  verify the public set and the project's vectors
#   scripts/conformance-java.sh verify PATH...   verify vector files or folders
#   scripts/conformance-java.sh record PATH...   write every step's expect from the library
# The public set is $CBPROBE_CONFORMANCE_DIR, else ../shared/conformance beside the
# repository. Maven runs offline first when ~/.m2 already holds what the build needs,
# online (Maven Central) otherwise; a jar newer than every source file is not rebuilt.
# Fails with what to install when java or mvn is missing. Exit 1: a vector differs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
proj="$root/breaker/conformance/java"

missing=()
command -v java >/dev/null 2>&1 || missing+=("java (a JDK 17 or newer: apt-get install openjdk-17-jdk-headless)")
command -v mvn >/dev/null 2>&1 || missing+=("mvn (Apache Maven 3.8 or newer: apt-get install maven)")
if [ ${#missing[@]} -gt 0 ]; then
	echo "conformance-java: cannot build the Resilience4j replayer: missing ${missing[*]}" >&2
	exit 1
fi
jv=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
if [ -z "$jv" ] || [ "${jv%%.*}" -lt 17 ]; then
	echo "conformance-java: java $jv is too old: the replayer needs a JDK 17 or newer (apt-get install openjdk-17-jdk-headless)" >&2
	exit 1
fi

jar="$proj/target/r4j-conformance.jar"
if [ "${FORCE:-0}" = 1 ] || [ ! -f "$jar" ] || [ -n "$(find "$proj/pom.xml" "$proj/src" -newer "$jar" -print -quit)" ]; then
	start=$SECONDS
	log="$proj/target/build.log"
	mkdir -p "$proj/target"
	echo "conformance-java: building $jar"
	if ! (cd "$proj" && mvn -B -ntp -o package >"$log" 2>&1); then
		if ! (cd "$proj" && mvn -B -ntp package >"$log" 2>&1); then
			tail -n 60 "$log" >&2
			echo "conformance-java: mvn package failed; full log: $log" >&2
			exit 1
		fi
	fi
	echo "conformance-java: built in $((SECONDS - start)) s"
fi

mode=verify
if [ $# -gt 0 ]; then
	mode=$1
	shift
fi
paths=("$@")
if [ ${#paths[@]} -eq 0 ]; then
	public="${CBPROBE_CONFORMANCE_DIR:-$root/../shared/conformance}"
	if [ ! -d "$public" ]; then
		echo "conformance-java: the public conformance vectors are missing: no folder $public" >&2
		echo "conformance-java: set CBPROBE_CONFORMANCE_DIR to the folder holding the 338 shared/conformance/*.json files" >&2
		exit 1
	fi
	n=$(find "$public" -maxdepth 1 -name '*.json' | wc -l)
	if [ -z "${CBPROBE_CONFORMANCE_DIR:-}" ] && [ "$n" -ne 338 ]; then
		echo "conformance-java: $public holds $n vector files, want the 338 public ones" >&2
		exit 1
	fi
	paths=("$public" "$root/breaker/conformance/testdata/vectors")
fi
# C1 only and the serial collector: a short run spends less CPU compiling and collecting.
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -jar "$jar" "$mode" "${paths[@]}"
