package otelzlink_test

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

const modulePath = "github.com/zlink-go/zlink"

// TestLayering_CoreDoesNotImportOpenTelemetry walks the module-internal
// non-test imports of wire, routemesh and spot: none of them imports
// OpenTelemetry itself (only this package does).
func TestLayering_CoreDoesNotImportOpenTelemetry(t *testing.T) {
	seen := map[string]bool{}
	var walk func(pkg string, via []string)
	walk = func(pkg string, via []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		dir := filepath.Join("..", filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/")))
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			switch {
			case strings.HasPrefix(imp, "go.opentelemetry.io/"):
				t.Errorf("%s imports %s (via %s)", pkg, imp, strings.Join(via, " -> "))
			case strings.HasPrefix(imp, modulePath+"/"):
				walk(imp, append(via[:len(via):len(via)], imp))
			}
		}
	}
	for _, core := range []string{"wire", "routemesh", "spot"} {
		walk(modulePath+"/"+core, []string{core})
	}
	if !seen[modulePath+"/internal/zerr"] || !seen[modulePath+"/actors"] {
		t.Fatal("the walk did not reach internal/zerr and actors: the test no longer sees the imports")
	}
}
