package springcommerce

import (
	"archive/zip"
	"regexp"
	"sort"
	"testing"
)

// resilience4jVersion is the version the conformance vectors were recorded from; the
// example pins every resilience4j-* module to it through resilience4j-bom.
const resilience4jVersion = "2.4.0"

// TestJarsShipPinnedResilience4j opens both jars and checks that every resilience4j-*
// library inside is 2.4.0 and that each generation has its own starter. A BOM imported after
// spring-cloud-dependencies changes nothing (Maven takes the first import's version), and the
// jars then shipped 2.2.0 (Boot 3) and 2.3.0 (Boot 4) without any build error.
func TestJarsShipPinnedResilience4j(t *testing.T) {
	lib := regexp.MustCompile(`^BOOT-INF/lib/(resilience4j-[a-z0-9-]+?)-(\d[^/]*)\.jar$`)
	for _, tc := range []struct{ gen, starter, forbidden string }{
		{"boot3", "resilience4j-spring-boot3", "resilience4j-spring-boot4"},
		{"boot4", "resilience4j-spring-boot4", "resilience4j-spring-boot3"},
	} {
		t.Run(tc.gen, func(t *testing.T) {
			jar := jarPath(t, tc.gen)
			zr, err := zip.OpenReader(jar)
			if err != nil {
				t.Fatalf("open %s: %v", jar, err)
			}
			defer zr.Close()
			found := map[string]string{}
			for _, f := range zr.File {
				if m := lib.FindStringSubmatch(f.Name); m != nil {
					found[m[1]] = m[2]
				}
			}
			var wrong []string
			for name, v := range found {
				if v != resilience4jVersion {
					wrong = append(wrong, name+"-"+v)
				}
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				t.Errorf("%s ships %v, want every resilience4j module at %s (import resilience4j-bom before spring-cloud-dependencies)", jar, wrong, resilience4jVersion)
			}
			if _, ok := found[tc.starter]; !ok {
				t.Errorf("%s lacks %s", jar, tc.starter)
			}
			if _, ok := found[tc.forbidden]; ok {
				t.Errorf("%s ships %s, which does not belong to this generation", jar, tc.forbidden)
			}
			if len(found) < 8 {
				t.Errorf("%s: only %d resilience4j libraries (%v)", jar, len(found), found)
			}
		})
	}
}
