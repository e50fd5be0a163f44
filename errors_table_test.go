package zlink_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zlink-go/zlink/internal/zerr"
)

// notCallResults are the sentinels of internal/zerr that no call ends
// with: startup and operation refusals. Every other sentinel defined
// there is a terminal result and needs its row in zerr.Table.
var notCallResults = map[string]bool{
	"ErrStopped": true, "ErrNeedsLocationStore": true, "ErrConfig": true, "ErrSpotConfig": true,
	"ErrNotEnabled": true, "ErrUnknownKind": true, "ErrNoOwner": true,
}

// declaredErrs lists the exported Err* variables declared in the Go files
// of dir (test files aside).
func declaredErrs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	out := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						out[n.Name] = true
					}
				}
			}
		}
	}
	return out
}

// TestErrorTable_EverySentinelHasItsRow: one table defines each terminal
// result's sentinel, wire code, name and whether the handler ran. A
// sentinel added without its row, a row without its re-export in package
// zlink, or without its row in the README's error table fails here.
func TestErrorTable_EverySentinelHasItsRow(t *testing.T) {
	codes, names, idents := map[uint16]string{}, map[string]bool{}, map[string]bool{}
	for _, r := range zerr.Table {
		if r.Err == nil || r.Ident == "" || r.Name == "" || r.Ran == 0 {
			t.Errorf("row %+v is missing a field", r)
		}
		if r.Code != 0 {
			if prev, dup := codes[r.Code]; dup {
				t.Errorf("code %d of %s is %s's too", r.Code, r.Ident, prev)
			}
			codes[r.Code] = r.Ident
		}
		if names[r.Name] || idents[r.Ident] {
			t.Errorf("%s/%s appears twice", r.Ident, r.Name)
		}
		names[r.Name], idents[r.Ident] = true, true
		if !strings.HasPrefix(r.Err.Error(), "zlink: ") {
			t.Errorf("%s's text %q lacks the zlink: prefix", r.Ident, r.Err)
		}
	}
	for name := range declaredErrs(t, "internal/zerr") {
		if !idents[name] && !notCallResults[name] {
			t.Errorf("zerr.%s has no row in zerr.Table (its wire code, name, whether the handler ran) and is not listed as a refusal", name)
		}
	}
	exported := declaredErrs(t, ".")
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // ident -> the handler column
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `zlink.Err") {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) < 5 {
			t.Fatalf("README error row %q has no handler column", line)
		}
		ident := strings.Trim(strings.TrimSpace(cols[1]), "`")
		rows[strings.TrimPrefix(ident, "zlink.")] = strings.TrimSpace(cols[3])
	}
	for _, r := range zerr.Table {
		if !exported[r.Ident] {
			t.Errorf("package zlink does not re-export %s", r.Ident)
		}
		col, ok := rows[r.Ident]
		if !ok {
			t.Errorf("the README's error table has no row for zlink.%s", r.Ident)
			continue
		}
		switch r.Ran {
		case zerr.RanDepends:
			if !strings.Contains(col, ";") || !strings.Contains(col, "did not run") {
				t.Errorf("README: zlink.%s's handler column %q should say when it did not run and when it did (or may have)", r.Ident, col)
			}
		default:
			if !strings.HasPrefix(col, r.Ran.String()) {
				t.Errorf("README: zlink.%s's handler column %q, the table says %q", r.Ident, col, r.Ran)
			}
		}
	}
	for ident := range rows {
		if !idents[ident] {
			t.Errorf("the README's error table has zlink.%s, which is not in zerr.Table", ident)
		}
	}
	// docs/wire-protocol.md's error code table: a row "| name | code |"
	// for every code that crosses the wire.
	proto, err := os.ReadFile("docs/wire-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range zerr.Table {
		if r.Code != 0 && !strings.Contains(string(proto), fmt.Sprintf("| %s | %d | `%s`", r.Name, r.Code, r.Ident)) {
			t.Errorf("docs/wire-protocol.md has no error code row for %s (%d, %s)", r.Name, r.Code, r.Ident)
		}
	}
}
