package benchrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/test/fault"
)

// A Server of `bench faults` in a child process, so a scenario can kill
// it with SIGKILL. The bench re-executes its own binary (zlink-node, or
// the test binary) with ZLINK_FAULTS_CHILD set; this package's init then
// runs the node instead of the program.
func init() {
	if os.Getenv("ZLINK_FAULTS_CHILD") == "1" {
		runFaultsChild()
	}
}

// runFaultsChild runs a Server of channel "echo": with a fixed RID
// ($ZLINK_FAULTS_RID) listening on $ZLINK_FAULTS_LISTEN, or automatic on
// the Redis at $ZLINK_FAULTS_REDIS with RID prefix $ZLINK_FAULTS_PREFIX,
// then also an Object Server of the Spots bench kind when
// $ZLINK_FAULTS_SPOTS is 1.
// It prints "READY <rid> <endpoint>" and runs until killed or until its
// stdin closes.
func runFaultsChild() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	o := zlink.NewOptions().SetLogger(zerolog.Nop())
	b := o.AddRouteMesh(faultMesh).ConfigureLiveness(faultLiveness)
	if addr := os.Getenv("ZLINK_FAULTS_REDIS"); addr != "" {
		store, err := location.NewRedis(ctx, location.RedisConfig{Addr: addr, PollInterval: 100 * time.Millisecond,
			DialTimeout: time.Second, OpTimeout: time.Second})
		if err != nil {
			fmt.Fprintf(os.Stdout, "FAILED %v\n", err)
			os.Exit(2)
		}
		o.SetLocationStore(store)
		b.SetRoutingIDPrefix(os.Getenv("ZLINK_FAULTS_PREFIX")).ConfigureDiscovery(faultDiscovery)
		if os.Getenv("ZLINK_FAULTS_SPOTS") == "1" { // an Object Server of the bench kind
			b.SetObjectRole(routemesh.ObjectServer)
			spot.EnableWith(b, faultSpotsConfig, spotsBenchKind())
		}
	} else {
		b.SetRoutingID(os.Getenv("ZLINK_FAULTS_RID")).Listen(os.Getenv("ZLINK_FAULTS_LISTEN"))
	}
	b.Channel("echo").Server().HandleRequest("echo", faultEcho)
	h, err := zlink.Start(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stdout, "FAILED %v\n", err)
		os.Exit(2)
	}
	m := h.Mesh(faultMesh)
	fmt.Fprintf(os.Stdout, "READY %s %s\n", m.RID(), m.Endpoint())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin or dies
	os.Exit(0)
}

// faultChild is a running child Server.
type faultChild struct {
	*fault.Child
	rid, endpoint string
}

// startFaultChild starts a child Server with env (ZLINK_FAULTS_*
// settings), killed when the rig closes.
func startFaultChild(r *faultRig, env ...string) (*faultChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(append(os.Environ(), "ZLINK_FAULTS_CHILD=1"), env...)
	cmd.Stderr = os.Stderr
	c, err := fault.StartChild(cmd, 20*time.Second)
	if err != nil {
		return nil, err
	}
	r.onClose(c.Kill)
	if f := c.Ready(); len(f) == 2 {
		return &faultChild{Child: c, rid: f[0], endpoint: f[1]}, nil
	}
	c.Kill()
	return nil, fmt.Errorf("faults: child READY line %q", c.Ready())
}
