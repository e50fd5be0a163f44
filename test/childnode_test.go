package test

// A MeshNode in a child process, so fault tests can crash (SIGKILL) or
// freeze (SIGSTOP) a real peer. The test binary re-executes itself with
// ZLINK_CHILD_NODE=1; init then runs the node instead of the tests. The
// process handling is fault.Child's.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/test/fault"
)

const childMesh = "game"

func init() {
	if os.Getenv("ZLINK_CHILD_NODE") == "1" {
		runChildNode()
	}
}

// runChildNode starts a host with RID $ZLINK_CHILD_RID listening on
// $ZLINK_CHILD_LISTEN, prints "READY <endpoint>", and never returns: it
// exits when killed or when its stdin closes (the parent test is gone).
// Handlers: "block" prints "BLOCKED" and blocks forever, "echo" echoes,
// "pid" returns the pid.
func runChildNode() {
	log := zerolog.Nop()
	if os.Getenv("ZLINK_TEST_LOG") != "" {
		log = zerolog.New(os.Stderr).Level(zerolog.DebugLevel).With().Int("pid", os.Getpid()).Logger()
	}
	forever := make(chan struct{})
	o := zlink.NewOptions().SetLogger(log)
	mb := o.AddRouteMesh(childMesh)
	// Also a Server of the "echo" channel, for the fault scenarios under load.
	mb.Channel("echo").Server().HandleRequest("echo", echo)
	mb.SetRoutingID(os.Getenv("ZLINK_CHILD_RID")).
		Listen(os.Getenv("ZLINK_CHILD_LISTEN")).ConfigureLiveness(fastLiveness).
		HandleDirectRequest("block", func(*routemesh.Context, []byte) ([]byte, error) {
			fmt.Fprintln(os.Stdout, "BLOCKED")
			<-forever
			return nil, nil
		}).
		HandleDirectRequest("echo", echo).
		HandleDirectRequest("pid", func(*routemesh.Context, []byte) ([]byte, error) {
			return []byte(strconv.Itoa(os.Getpid())), nil
		})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	h, err := zlink.Start(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stdout, "FAILED %v\n", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stdout, "READY %s\n", h.Mesh(childMesh).Endpoint())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin or dies
	os.Exit(0)
}

// childFail ends a child process whose node could not start.
func childFail(err error) {
	fmt.Fprintf(os.Stdout, "FAILED %v\n", err)
	os.Exit(2)
}

// childServe says the child's node n is ready ("READY rid endpoint") and
// runs until the parent closes stdin or dies.
func childServe(n *routemesh.Node) {
	fmt.Fprintf(os.Stdout, "READY %s %s\n", n.RID(), n.Endpoint())
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startRIDChild runs a child that ends in childServe and returns it with
// its RID. It is killed at cleanup.
func startRIDChild(t *testing.T, what string, env ...string) (*childNode, string) {
	t.Helper()
	c, f := runChild(t, what, env...)
	if len(f) != 2 {
		t.Fatalf("%s: READY line %q", what, f)
	}
	c.endpoint = f[1]
	return c, f[0]
}

// childNode is a running child process node.
type childNode struct {
	*fault.Child
	endpoint string
	pid      int
}

// startChild runs a child node with rid on listen and waits (with a
// deadline) for its READY line. It is always killed at cleanup.
func startChild(t *testing.T, rid, listen string) *childNode {
	t.Helper()
	c, fields := runChild(t, "child "+rid, "ZLINK_CHILD_NODE=1", "ZLINK_CHILD_RID="+rid, "ZLINK_CHILD_LISTEN="+listen)
	if len(fields) != 1 {
		t.Fatalf("child %s: READY line %q", rid, fields)
	}
	c.endpoint = fields[0]
	return c
}

// runChild re-runs the test binary as a child node (the env selects which
// init() takes over), waits (with a deadline) for its "READY …" line and
// returns the line's fields after READY. The child is killed at cleanup.
func runChild(t *testing.T, what string, env ...string) (*childNode, []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	c, err := fault.StartChild(cmd, 20*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Cleanup(c.Kill)
	return &childNode{Child: c, pid: c.Pid()}, c.Ready()
}

// waitLine waits (with a deadline) for the child to print want.
func (c *childNode) waitLine(t *testing.T, want string) {
	t.Helper()
	if err := c.WaitLine(want, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// kill SIGKILLs the child (also when stopped) and reaps it. Idempotent.
func (c *childNode) kill(t *testing.T) {
	t.Helper()
	c.Kill()
}

// stop freezes the child (SIGSTOP): its sockets stay open, it answers nothing.
func (c *childNode) stop(t *testing.T) {
	t.Helper()
	if err := c.Stop(); err != nil {
		t.Fatalf("SIGSTOP child: %v", err)
	}
	t.Cleanup(func() { _ = c.Cont() })
}
