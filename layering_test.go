package zlink_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/zlink-go/zlink"

// pureMachines are the packages that decide (handshake and admission,
// liveness, selection, placement, fencing, the timer schedule), and the
// single files that do inside a larger package (a path ending in .go: the
// pipe writer's batcher): plain Go types driven by the actors or the
// goroutine that owns them, with the clock and randomness injected.
var pureMachines = []string{
	"internal/fence",
	"routemesh/internal/admission",
	"routemesh/internal/handshake",
	"routemesh/internal/liveness",
	"routemesh/internal/selection",
	"routemesh/batcher.go",
	"spot/internal/placement",
	"spot/internal/timers",
}

// TestLayering_PureMachinesReadNoClockAndStartNoGoroutine parses the
// non-test files of every pure machine: none reads the wall clock, waits,
// or starts a goroutine — time comes in as an argument.
func TestLayering_PureMachinesReadNoClockAndStartNoGoroutine(t *testing.T) {
	banned := []string{"Now", "Since", "Until", "After", "AfterFunc", "NewTimer", "NewTicker", "Sleep", "Tick"}
	files := 0
	for _, dir := range pureMachines {
		names := []string{filepath.Base(dir)}
		if strings.HasSuffix(dir, ".go") {
			dir = filepath.Dir(dir)
		} else {
			p, err := build.ImportDir(dir, 0)
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			names = p.GoFiles
		}
		for _, name := range names {
			path := filepath.Join(dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files++
			timeName := "" // the name the file imports "time" under
			for _, imp := range f.Imports {
				if v, _ := strconv.Unquote(imp.Path.Value); v == "time" {
					timeName = "time"
					if imp.Name != nil {
						timeName = imp.Name.Name
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: starts a goroutine (a pure machine is driven by its actor)", path)
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && timeName != "" && x.Name == timeName && slices.Contains(banned, n.Sel.Name) {
						t.Errorf("%s: uses time.%s (the clock is injected)", path, n.Sel.Name)
					}
				}
				return true
			})
		}
	}
	if files < len(pureMachines) {
		t.Fatalf("parsed %d files of %d packages: the test no longer sees them", files, len(pureMachines))
	}
}

// imports returns the module packages pkg imports, directly or not
// (non-test files), with the path that reaches each.
func imports(t *testing.T, pkg string) map[string][]string {
	t.Helper()
	seen := map[string][]string{}
	var walk func(pkg string, via []string)
	walk = func(pkg string, via []string) {
		if _, ok := seen[pkg]; ok {
			return
		}
		seen[pkg] = via
		p, err := build.ImportDir("./"+filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/")), 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, modulePath+"/") {
				walk(imp, append(via[:len(via):len(via)], imp))
			}
		}
	}
	walk(pkg, []string{pkg})
	return seen
}

// TestLayering_WireImportsNoRuntime: wire (frames, envelopes, packets,
// codes) stands under everything; of this module it imports only the
// error values and the msgpack reader.
func TestLayering_WireImportsNoRuntime(t *testing.T) {
	for pkg, via := range imports(t, modulePath+"/wire") {
		switch strings.TrimPrefix(pkg, modulePath+"/") {
		case "wire", "internal/zerr", "internal/msgp":
		default:
			t.Errorf("wire imports %s (via %s)", pkg, strings.Join(via, " -> "))
		}
	}
}

// TestLayering_BridgesImportNothing: the internal bridges through which
// the root package and spot reach plumbing that is no public API
// (internal/meshbridge for routemesh.Node's, internal/faults for the
// Host's) import no package of this module: the package that owns the
// plumbing imports the bridge and fills it in, never the other way round.
func TestLayering_BridgesImportNothing(t *testing.T) {
	for _, bridge := range []string{"internal/meshbridge", "internal/faults"} {
		for pkg, via := range imports(t, modulePath+"/"+bridge) {
			if pkg != modulePath+"/"+bridge {
				t.Errorf("%s imports %s (via %s)", bridge, pkg, strings.Join(via, " -> "))
			}
		}
	}
}

// TestLayering_CoreImportsNoToolOrTestPackage: no package of the runtime
// (the root package and everything it and the admin, metrics and fanout
// packages reach) imports the command, the bench harness, the
// OpenTelemetry adapter, the examples or a package made for tests.
func TestLayering_CoreImportsNoToolOrTestPackage(t *testing.T) {
	forbidden := []string{"cmd", "otelzlink", "examples", "test", "internal/cdptest", "internal/zguard/tlstest", "location/locationtest", "routemesh/internal/transport/memnet"}
	roots := []string{"", "/admin", "/metrics", "/fanout", "/spot", "/spot/counter", "/routemesh", "/location", "/supervisor", "/actors", "/mailbox", "/wire"}
	reached := 0
	for _, root := range roots {
		for pkg, via := range imports(t, modulePath+root) {
			reached++
			rel := strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/")
			for _, f := range forbidden {
				if rel == f || strings.HasPrefix(rel, f+"/") {
					t.Errorf("%s imports %s (via %s)", modulePath+root, pkg, strings.Join(via, " -> "))
				}
			}
		}
	}
	if reached < 30 {
		t.Fatalf("the walk reached %d packages: the test no longer sees the imports", reached)
	}
}

// TestNaming_TypedAndRawForms holds the one naming rule of the two forms
// of every verb: the typed form is a package function taking a
// wire.Packet (routemesh.Call, routemesh.OnRequest, spot.On, spot.Send);
// the raw form takes a packet name and bytes and is a method
// (Node.Call, ServerBuilder.HandleRequest, Replies.CallSpot) or, where
// the package has no receiver for it, a function named …Raw
// (spot.CallRaw, spot.SendRaw, spot.OnRaw).
func TestNaming_TypedAndRawForms(t *testing.T) {
	checked := 0
	for _, dir := range []string{"routemesh", "spot", "fanout"} {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range p.GoFiles {
			path := filepath.Join(dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv != nil || !fd.Name.IsExported() {
					continue
				}
				takesPacket, takesName := false, false
				for _, field := range fd.Type.Params.List {
					typ := types(field.Type)
					if strings.HasPrefix(typ, "wire.Packet[") {
						takesPacket = true
					}
					for _, n := range field.Names {
						if n.Name == "packet" && typ == "string" {
							takesName = true
						}
					}
				}
				raw := strings.HasSuffix(fd.Name.Name, "Raw")
				switch {
				case takesPacket && raw:
					t.Errorf("%s: %s takes a wire.Packet: a typed form is not named …Raw", path, fd.Name.Name)
				case takesName && !raw:
					t.Errorf("%s: %s takes a packet name: a raw form that is a function is named …Raw", path, fd.Name.Name)
				}
				if takesPacket || takesName {
					checked++
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d functions: the test no longer sees the typed and raw forms", checked)
	}
}

// types renders a parameter's type expression (enough for the naming
// rule: identifiers, selectors, index expressions).
func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	case *ast.IndexExpr:
		return types(e.X) + "[" + types(e.Index) + "]"
	case *ast.IndexListExpr:
		parts := make([]string, len(e.Indices))
		for i, x := range e.Indices {
			parts[i] = types(x)
		}
		return types(e.X) + "[" + strings.Join(parts, ", ") + "]"
	case *ast.StarExpr:
		return "*" + types(e.X)
	case *ast.ArrayType:
		return "[]" + types(e.Elt)
	}
	return "?"
}

// complexityDebt lists the functions still above the complexity limit
// (none today), each with the complexity it may not exceed; the next
// change to each splits it (docs/status.md). A function not listed may not pass the
// limit, and a listed one may not grow.
var complexityDebt = map[string]int{}

// TestComplexity_NoFunctionAboveTheLimit computes the cyclomatic
// complexity (1 + if, for, range, case, &&, ||) of every non-test
// function outside the packages made for tests: none is above 25.
func TestComplexity_NoFunctionAboveTheLimit(t *testing.T) {
	const limit = 25
	skip := []string{"test", "examples", ".git", "testdata", "location/locationtest", "internal/cdptest", "internal/zguard/tlstest", "routemesh/internal/transport/memnet"}
	funcs := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			for _, s := range skip {
				if path == s || strings.HasPrefix(path, s+"/") || strings.HasPrefix(path, "readme-program-") {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			funcs++
			c, key := complexity(fd.Body), filepath.ToSlash(path)+":"+fd.Name.Name
			if max, ok := complexityDebt[key]; ok {
				if c > max {
					t.Errorf("%s: complexity %d, above its listed %d: split it", key, c, max)
				}
				continue
			}
			if c > limit {
				t.Errorf("%s: complexity %d, above %d: split it", key, c, limit)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if funcs < 1000 {
		t.Fatalf("measured %d functions: the walk no longer sees the code", funcs)
	}
}

func complexity(body *ast.BlockStmt) int {
	c := 1
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // counted on its own terms: a closure is not its parent's branches
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// TestLayering_NoProtoactorInPublicAPI: no exported signature of a public
// package (every package outside internal/, cmd/, examples/ and the test
// packages) names a protoactor-go type — functions, methods of exported
// types, exported types (their exported fields, interface methods,
// embedded types), exported variables and constants. protoactor is the
// engine under actors, mailbox and supervisor, behind internal adapters.
func TestLayering_NoProtoactorInPublicAPI(t *testing.T) {
	skipTop := []string{"cmd", "examples", "test", "bench", "docs", "scripts"}
	checked := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		parts := strings.Split(filepath.ToSlash(path), "/")
		if slices.Contains(parts, "internal") || slices.Contains(parts, "testdata") || strings.HasPrefix(d.Name(), ".") && path != "." ||
			slices.Contains(skipTop, parts[0]) {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go package here
		}
		for _, name := range p.GoFiles {
			file := filepath.Join(path, name)
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				return err
			}
			checked++
			for _, e := range protoactorInAPI(f) {
				t.Errorf("%s: %s", file, e)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked %d files: the test no longer sees the public packages", checked)
	}
}

// The check itself finds what it must: each form of exposure is caught.
func TestLayering_NoProtoactorInPublicAPI_Catches(t *testing.T) {
	src := `package p
import (
	pa "github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
)
type Spec struct { Producer func() pa.Actor; hidden pa.Props }
type Ref struct{ pid *pa.PID }
func (r *Ref) PID() *pa.PID { return r.pid }
func Self(c pa.Context) *Ref { return nil }
type I interface { Receive(pa.Context) }
type E struct{ *remote.Remote }
type A = pa.PID
var V = pa.NewPID("a", "b")
var W pa.Props
func ok(c pa.Context) {}
type hidden struct{ c pa.Context }
func (hidden) Exported(c pa.Context) {}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := protoactorInAPI(f)
	for _, want := range []string{"Spec", "Ref.PID", "Self", "I", "E", "A", "V", "W"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want+" ") }) {
			t.Errorf("%s not reported; got %q", want, got)
		}
	}
	if len(got) != 8 {
		t.Errorf("reported %d, want 8 (unexported names and fields are not API): %q", len(got), got)
	}
}

// protoactorInAPI lists the exported declarations of f whose signature
// names a protoactor-go type ("Name names actor.PID").
func protoactorInAPI(f *ast.File) []string {
	pkgs := map[string]bool{} // the names f imports protoactor packages under
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !strings.HasPrefix(p, "github.com/asynkron/protoactor-go") {
			continue
		}
		name := p[strings.LastIndexByte(p, '/')+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		pkgs[name] = true
	}
	if len(pkgs) == 0 {
		return nil
	}
	names := func(e ast.Node) string { // the first protoactor type e names, or ""
		found := ""
		if e == nil {
			return ""
		}
		ast.Inspect(e, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && found == "" {
				if x, ok := s.X.(*ast.Ident); ok && pkgs[x.Name] {
					found = x.Name + "." + s.Sel.Name
				}
			}
			return found == ""
		})
		return found
	}
	exportedTypes := map[string]bool{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
					exportedTypes[ts.Name.Name] = true
				}
			}
		}
	}
	var out []string
	report := func(name, typ string) {
		if typ != "" {
			out = append(out, name+" names "+typ)
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil {
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if ix, ok := recv.(*ast.IndexExpr); ok {
					recv = ix.X
				}
				id, ok := recv.(*ast.Ident)
				if !ok || !exportedTypes[id.Name] {
					continue
				}
				name = id.Name + "." + name
			}
			report(name, names(d.Type))
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					typ := ""
					if s.TypeParams != nil {
						typ = names(s.TypeParams)
					}
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fld := range st.Fields.List {
							exported := len(fld.Names) == 0 // embedded: its methods are promoted
							for _, n := range fld.Names {
								exported = exported || n.IsExported()
							}
							if exported && typ == "" {
								typ = names(fld.Type)
							}
						}
					} else if typ == "" {
						typ = names(s.Type)
					}
					report(s.Name.Name, typ)
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if !n.IsExported() {
							continue
						}
						typ := names(s.Type)
						if typ == "" && i < len(s.Values) {
							typ = names(s.Values[i]) // conservatively: a value built from protoactor
						}
						report(n.Name, typ)
					}
				}
			}
		}
	}
	return out
}

// TestLayering_OnlyTheActorAdaptersImportProtoactor: protoactor-go is
// imported (by non-test files) only by actors and its two adapters, and
// by the bench harness for its raw baselines; every other package builds
// on actors.
func TestLayering_OnlyTheActorAdaptersImportProtoactor(t *testing.T) {
	allowed := []string{"actors", "internal/pamailbox", "internal/pasupervisor", "cmd/node/internal/benchrun"}
	found := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata" {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go package here
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/asynkron/protoactor-go") {
				found++
				if !slices.Contains(allowed, filepath.ToSlash(path)) {
					t.Errorf("%s imports %s: build on package actors instead", path, imp)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < len(allowed) {
		t.Fatalf("found %d protoactor imports: the test no longer sees them", found)
	}
}
