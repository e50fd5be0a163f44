package fault_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zlink-go/zlink/test/fault"
)

var errKnown = errors.New("known")

// A ledger reconciles: every call begun ends once, typed errors by kind,
// anything else untyped — and Check says which rule broke.
func TestLedger_Reconciles(t *testing.T) {
	l := fault.NewLedger(errKnown)
	l.Begin()
	l.End("a", nil)
	l.Begin()
	l.End("", errors.Join(errKnown, errors.New("detail")))
	if err := l.Account().Check(); err != nil {
		t.Fatalf("a reconciled ledger: %v", err)
	}
	l.Begin()
	if err := l.Account().Check(); err == nil {
		t.Fatal("a call begun and not ended passed the check")
	}
	l.End("", errors.New("stranger"))
	a := l.Account()
	if err := a.Check(); err == nil {
		t.Fatal("an untyped error passed the check")
	}
	if a.OK != 1 || a.Errs[errKnown.Error()] != 1 || len(a.Untyped) != 1 || l.Served("a") != 1 || l.Failed(errKnown) != 1 {
		t.Fatalf("counts %+v", a)
	}
	if sum := a.Add(a); sum.Issued != 6 || sum.ByRID["a"] != 2 || len(sum.Untyped) != 2 {
		t.Fatalf("sum %+v", sum)
	}
}

// Run's workers call until Stop; Since counts from the last Mark.
func TestLedger_RunAndMark(t *testing.T) {
	l := fault.NewLedger(errKnown).Run(2, time.Second, func(context.Context) (string, error) { return "x", nil })
	deadline := time.Now().Add(10 * time.Second)
	for l.Since("x") < 100 {
		if time.Now().After(deadline) {
			t.Fatal("no calls counted")
		}
		time.Sleep(time.Millisecond)
	}
	l.Mark()
	if l.Since("x") > l.Served("x") {
		t.Fatal("Since counts more than Served")
	}
	l.Stop()
	a := l.Account()
	if err := a.Check(); err != nil || a.OK != a.Issued {
		t.Fatalf("after Stop: %+v, %v", a, err)
	}
}
