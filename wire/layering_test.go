package wire

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

const modulePath = "github.com/zlink-go/zlink"

// TestLayering_WireDoesNotImportActorsOrMailbox walks wire's non-test imports
// inside this module: the sentinels wire maps to codes come from
// internal/zerr, so wire must not reach actors or mailbox.
func TestLayering_WireDoesNotImportActorsOrMailbox(t *testing.T) {
	forbidden := map[string]bool{modulePath + "/actors": true, modulePath + "/mailbox": true}
	seen := map[string]bool{}
	var walk func(pkg string, via []string)
	walk = func(pkg string, via []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		if forbidden[pkg] {
			t.Errorf("wire imports %s via %s", pkg, strings.Join(via, " -> "))
			return
		}
		dir := filepath.Join("..", filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/")))
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, modulePath+"/") {
				walk(imp, append(via[:len(via):len(via)], imp))
			}
		}
	}
	walk(modulePath+"/wire", []string{"wire"})
	if !seen[modulePath+"/internal/zerr"] {
		t.Fatal("walk did not reach internal/zerr: the test no longer sees wire's imports")
	}
}
