package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestFanout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if want := "match/7 1:0\nmatch/7 2:1\nmatch/7 3:2\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}
