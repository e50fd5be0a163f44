package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zlink-go/zlink/admin"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

type spotFlags struct {
	location, mesh, peer string
	timeout              time.Duration
	secretFile, logLevel string
	tls                  tlsFiles
}

func newSpotCmd() *cobra.Command {
	f := &spotFlags{}
	c := &cobra.Command{
		Use:   "spot --location URL [--peer ENDPOINT[#RID]] --mesh NAME KIND ID OP [ARG]",
		Short: "Call a Spot through an ephemeral Object Client node (e.g. counter player-1 add 5)",
		Args:  cobra.RangeArgs(3, 4),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if err := checkSpotName(args[0], args[1]); err != nil {
				return err
			}
			var arg []byte
			if len(args) == 4 {
				arg = []byte(args[3])
			}
			return runSpot(cmd.Context(), f, args[0], args[1], args[2], arg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.location, "location", "", "Location Store: "+redisURLForms+" (required: Spots live in it)")
	fs.StringVar(&f.peer, "peer", "", "dial this Object Server ENDPOINT[#RID] and let it route the call (default: automatic topology)")
	fs.StringVar(&f.mesh, "mesh", defaultMesh, "MeshName")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "bounds the whole call: waiting for a ready Object Server, then the call")
	fs.StringVar(&f.secretFile, "secret-file", "", "shared-secret file of the trust profile")
	addTLSFlags(c, &f.tls)
	fs.StringVar(&f.logLevel, "log-level", "error", "log level (logs go to stderr)")
	return c
}

// checkSpotName refuses a KIND or ID the store would refuse (a usage
// error, exit 2) before any node starts.
func checkSpotName(kind, id string) error {
	switch {
	case kind == "" || id == "":
		return usagef(fmt.Sprintf("spot KIND %q ID %q: both must be non-empty", kind, id))
	case len(kind) > location.MaxNameLen || strings.Contains(kind, ":"):
		return usagef(fmt.Sprintf("spot KIND %.64q: want 1..%d bytes without ':'", kind, location.MaxNameLen))
	}
	return nil
}

func (f *spotFlags) check() error {
	switch {
	case f.location == "":
		return usagef("spot needs --location " + redisURLForms + " (Spots live in the Location Store)")
	case !isRedisURL(f.location):
		return usagef(fmt.Sprintf("--location %q: want %s", f.location, redisURLForms))
	case f.timeout <= 0:
		return usagef("--timeout must be positive")
	}
	if f.peer != "" {
		if _, err := parsePeer(f.peer); err != nil {
			return err
		}
	}
	_, err := f.tls.config()
	return err
}

// spotResult prints the one result line of the spot command:
//
//	ok rid=<owner RID> result=<reply as text>
//	error <code> <message>
type spotResult struct{ w io.Writer }

func (r spotResult) ok(rid string, reply []byte) {
	fmt.Fprintf(r.w, "ok rid=%s result=%s\n", rid, reply)
}

// fail prints the error line; the command then exits 1.
func (r spotResult) fail(code, msg string) error {
	fmt.Fprintf(r.w, "error %s %s\n", code, oneLine(msg))
	return errSilent
}

// spotCode is the stable lower_snake name of a Spot call's error
// (admin.SpotCode: the same names the admin API answers with).
func spotCode(err error) string { return admin.SpotCode(err) }

// runSpot starts an ephemeral Object Client node, waits until it can
// call Spots (or until the --peer Object Server is ready), makes one call
// and prints its result line.
func runSpot(ctx context.Context, f *spotFlags, kind, id, op string, arg []byte, stdout, stderr io.Writer) error {
	log, err := newLogger(stderr, f.logLevel, "json")
	if err != nil {
		return err
	}
	out := spotResult{w: stdout}
	var via routemesh.PeerConfig
	var peers []string
	if f.peer != "" {
		via, _ = parsePeer(f.peer) // checked by f.check
		peers = []string{f.peer}
	}
	e := &ephemeral{mesh: f.mesh, location: f.location, peers: peers, ridPrefix: "spot", secretFile: f.secretFile, tls: f.tls, log: log,
		configure: func(mb *routemesh.MeshBuilder) {
			mb.SetObjectRole(routemesh.ObjectClient)
			spot.Enable(mb)
		},
		// A mesh without an Object Server has nobody to host the Spot: say
		// so at once.
		precheck: func(descs []location.Descriptor) string {
			servers, draining := 0, 0
			for _, d := range descs {
				if d.ObjectRole == location.RoleServer {
					servers++
					if d.Draining {
						draining++
					}
				}
			}
			switch {
			case servers == 0:
				return fmt.Sprintf("no Object Server of mesh %q is registered in the Location Store %s (run one with --object server)", f.mesh, storeAddr(f.location))
			case draining == servers:
				return fmt.Sprintf("every Object Server of mesh %q is draining", f.mesh)
			}
			return ""
		}}
	node, stop, err := e.start(ctx)
	if nt, ok := errors.AsType[*noTargetError](err); ok {
		return out.fail(wire.CodeNoTarget.String(), nt.msg)
	}
	if err != nil {
		return err
	}
	defer stop()

	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var (
		reply []byte
		res   spot.Result
	)
	if f.peer != "" {
		rid, err := waitVia(ctx, node, via, f.timeout)
		if err != nil {
			return out.fail(wire.CodeNoTarget.String(), err.Error())
		}
		reply, res, err = spot.CallViaRaw(ctx, node, rid, kind, id, op, arg)
		if err != nil {
			return out.fail(spotCode(err), err.Error())
		}
	} else {
		if err := spot.WaitReady(ctx, node); err != nil {
			if wire.CodeOf(err) != wire.CodeTimeout {
				return out.fail(spotCode(err), err.Error())
			}
			return out.fail(wire.CodeNoTarget.String(), fmt.Sprintf("no ready Object Server of mesh %q within %s: %s",
				f.mesh, f.timeout, peerReasons(peerStatus(node))))
		}
		reply, res, err = spot.CallRaw(ctx, node, kind, id, op, arg)
		if err != nil {
			return out.fail(spotCode(err), err.Error())
		}
	}
	out.ok(res.Owner, reply)
	return nil
}

// peerStatus is the node's status for a message (empty when it cannot be
// read).
func peerStatus(n *routemesh.Node) routemesh.Status {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, _ := n.Status(ctx)
	return st
}

// waitVia waits until the --peer Object Server is ready and returns its
// RID (found by its endpoint when --peer names none). A definitive
// handshake refusal (wrong mesh, wrong RID, auth, version) ends the wait
// at once.
func waitVia(ctx context.Context, n *routemesh.Node, via routemesh.PeerConfig, timeout time.Duration) (string, error) {
	name := cliText(via.Endpoint)
	if via.ExpectRID != "" {
		name += "#" + via.ExpectRID
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if via.ExpectRID != "" {
			if ready, _ := n.PeerReady(via.ExpectRID); ready {
				return via.ExpectRID, nil
			}
		}
		st := peerStatus(n)
		var mine routemesh.Status
		for _, p := range st.Peers {
			// With #RID the manual peer shows that RID; without, its
			// endpoint. (Automatic nodes of the mesh may dial this node
			// too: they are other entries.)
			if (via.ExpectRID != "" && p.RID != via.ExpectRID) || (via.ExpectRID == "" && cliText(p.Endpoint) != cliText(via.Endpoint)) {
				continue
			}
			if p.State == routemesh.PeerReady && p.RID != "" {
				return p.RID, nil
			}
			mine.Peers = append(mine.Peers, p)
		}
		if allRefused(mine) {
			return "", fmt.Errorf("peer %s is not ready: %s", name, peerReasons(mine))
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("peer %s not ready within %s: %s", name, timeout, peerReasons(mine))
		case <-tick.C:
		}
	}
}
