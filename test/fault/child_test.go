package fault_test

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/zlink-go/zlink/test/fault"
)

func TestChild_ReadyLinesAndKill(t *testing.T) {
	c, err := fault.StartChild(exec.Command("sh", "-c", "echo READY a b; echo LINE; exec cat"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	if f := c.Ready(); len(f) != 2 || f[0] != "a" || f[1] != "b" {
		t.Fatalf("ready fields %q", f)
	}
	if err := c.WaitLine("LINE", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteLine("echoed"); err != nil { // cat prints it back
		t.Fatal(err)
	}
	if err := c.WaitLine("echoed", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	c.Kill() // a stopped child dies too
	c.Kill()
	if err := c.WaitLine("never", 10*time.Second); !errors.Is(err, fault.ErrChildExited) {
		t.Fatalf("after Kill: %v", err)
	}
}

func TestChild_NoReadyLine(t *testing.T) {
	if _, err := fault.StartChild(exec.Command("sh", "-c", "echo HELLO"), 10*time.Second); err == nil {
		t.Fatal("a child without a READY line was accepted")
	}
}

func TestRedis_StopAndStartOnTheSamePort(t *testing.T) {
	r, err := fault.StartRedis(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	addr := r.Addr()
	r.Command(t, "SET", "k", "v")
	r.Stop()
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if r.Addr() != addr {
		t.Fatalf("restarted on %s, was %s", r.Addr(), addr)
	}
	if v := r.Command(t, "EXISTS", "k"); v != "0" {
		t.Fatalf("the restarted server kept k (%s)", v)
	}
	if err := r.Start(); err == nil {
		t.Fatal("Start of a running server succeeded")
	}
}
