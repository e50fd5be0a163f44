package zerr

import (
	"errors"
	"fmt"
	"go/build"
	"strings"
	"testing"
)

// TestLeaf: zerr imports nothing but the standard library.
func TestLeaf(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Imports) == 0 {
		t.Fatal("no imports found: the test no longer sees the package")
	}
	for _, imp := range p.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("zerr imports %s; it must stay a leaf", imp)
		}
	}
}

// TestDistinct: every sentinel is its own value with the package prefix.
func TestDistinct(t *testing.T) {
	all := []error{ErrNoTarget, ErrTimeout, ErrMailboxFull, ErrBusy, ErrPeerLost, ErrTooLarge,
		ErrHandler, ErrCancelled, ErrShuttingDown, ErrProtocol, ErrUnknownPacket, ErrBadPayload,
		ErrStopped, ErrNeedsLocationStore, ErrConfig, ErrCycle, ErrFenced, ErrOutcomeUnknown, ErrRole,
		ErrNotEnabled, ErrUnknownKind, ErrNoOwner}
	texts := map[string]bool{}
	for i, e := range all {
		if !strings.HasPrefix(e.Error(), "zlink: ") {
			t.Errorf("%q lacks the zlink: prefix", e)
		}
		if texts[e.Error()] {
			t.Errorf("%q appears twice", e)
		}
		texts[e.Error()] = true
		for _, other := range all[:i] {
			if errors.Is(e, other) {
				t.Errorf("%q matches %q", e, other)
			}
		}
	}
}

// TestSpotConfigMatchesConfig: a Spot refusal is a configuration refusal.
func TestSpotConfigMatchesConfig(t *testing.T) {
	err := fmt.Errorf("%w: kind x", ErrSpotConfig)
	if !errors.Is(err, ErrSpotConfig) || !errors.Is(err, ErrConfig) {
		t.Fatalf("%v matches ErrSpotConfig %v, ErrConfig %v; want both", err, errors.Is(err, ErrSpotConfig), errors.Is(err, ErrConfig))
	}
	if errors.Is(ErrConfig, ErrSpotConfig) {
		t.Fatal("ErrConfig matches ErrSpotConfig")
	}
}
