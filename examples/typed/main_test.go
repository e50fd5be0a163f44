package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestTyped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out, 400); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "weighted: match-a=") ||
		lines[1] != "match-c drained: it served 0 of 100" || !strings.Contains(lines[2], "match-c=") {
		t.Fatalf("output:\n%s", out.String())
	}
}
