package zlink_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadme_ProgramsCompileAndRun takes every Go block of the README that
// is a whole program (it starts with "package main"), builds it inside
// this module as shown and runs it: a README program that stops
// compiling, or fails, fails here.
func TestReadme_ProgramsCompileAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var programs []string
	blocks := strings.Split(string(raw), "```go\n")
	for _, b := range blocks[1:] {
		end := strings.Index(b, "\n```")
		if end < 0 {
			t.Fatal("a Go block of the README is not closed")
		}
		if code := b[:end+1]; strings.HasPrefix(code, "package main\n") {
			programs = append(programs, code)
		}
	}
	if len(programs) == 0 {
		t.Fatal("the README has no whole program (a Go block starting with \"package main\")")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	for i, code := range programs {
		// Inside the module, so it builds against this checkout.
		dir, err := os.MkdirTemp(".", "readme-program-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o600); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(t.TempDir(), "program")
		if out, err := exec.Command(gobin, "build", "-o", bin, "./"+filepath.Base(dir)).CombinedOutput(); err != nil {
			t.Fatalf("README program %d does not build:\n%s", i+1, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, bin).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("README program %d: %v\n%s", i+1, err, out)
		}
		if i == 0 && !strings.Contains(string(out), "hello player-1 from lobby-1") {
			t.Fatalf("README program 1 printed:\n%s", out)
		}
	}
}
