package benchrun

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Proto.Actor Go remote (gRPC streams, batches of up to 1000 messages per
// write, protobuf serialization). The payload travels as a
// wrapperspb.BytesValue, a registered protobuf message, so no generated
// code is needed. Both processes run a remote (replies come back over the
// server's own connection to the client's address).
const (
	cmpProtoEcho = "echo"
	// cmpProtoMaxMsg is the raised gRPC message limit: a batch of 1000
	// 16 KiB messages is about 16.5 MiB, over gRPC's default 4 MiB.
	cmpProtoMaxMsg = 64 << 20
)

func init() {
	cmpImpls["protoactor"] = cmpImpl{
		name:  "protoactor",
		label: "Proto.Actor remote",
		about: "protoactor-go remote (gRPC), echo actor Respond; client actor ctx.Request with the window kept by the actor; gRPC message limit raised to 64 MiB",
		serve: cmpServeProto,
		dial:  cmpDialProto,
	}
}

func cmpProtoRemoteConfig(host string, port int, defaultLimits bool) *remote.Config {
	if defaultLimits {
		return remote.Configure(host, port)
	}
	return remote.Configure(host, port,
		remote.WithServerOptions(grpc.MaxRecvMsgSize(cmpProtoMaxMsg), grpc.MaxSendMsgSize(cmpProtoMaxMsg)),
		remote.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cmpProtoMaxMsg), grpc.MaxCallSendMsgSize(cmpProtoMaxMsg))),
	)
}

func cmpProtoSystem(log io.Writer) *actor.ActorSystem {
	if log == nil {
		log = io.Discard
	}
	return actor.NewActorSystemWithConfig(actor.Configure(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})))
}

func cmpSplitHostPort(hp string) (string, int, error) {
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return h, port, err
}

type cmpProtoEchoActor struct{}

func (cmpProtoEchoActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*wrapperspb.BytesValue); ok {
		ctx.Respond(m)
	}
}

func cmpServeProto(_ context.Context, f cmpServerFlags) (string, func(), error) {
	host, port, err := cmpSplitHostPort(f.listen)
	if err != nil {
		return "", nil, err
	}
	sys := cmpProtoSystem(nil)
	r := remote.NewRemote(sys, cmpProtoRemoteConfig(host, port, f.defaultLimits))
	r.Start()
	if _, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return cmpProtoEchoActor{} }), cmpProtoEcho); err != nil {
		r.Shutdown(false)
		return "", nil, err
	}
	return sys.Address(), func() { r.Shutdown(false); sys.Shutdown() }, nil
}

// cmpProtoClient is the client actor system with its remote.
type cmpProtoClient struct {
	sys    *actor.ActorSystem
	rem    *remote.Remote
	target *actor.PID
	closed chan struct{}
}

func cmpDialProto(_ context.Context, endpoint string, o cmpDialOpts) (cmpClient, error) {
	sys := cmpProtoSystem(o.log)
	r := remote.NewRemote(sys, cmpProtoRemoteConfig("127.0.0.1", 0, o.defaultLimits))
	r.Start()
	return &cmpProtoClient{sys: sys, rem: r, target: actor.NewPID(endpoint, cmpProtoEcho), closed: make(chan struct{})}, nil
}

func (c *cmpProtoClient) close() {
	close(c.closed)
	// Graceful: it closes the outbound gRPC connections, whose goroutines
	// would otherwise race the next remote's Start (it sets gRPC's
	// package-level logger).
	c.rem.Shutdown(true)
	c.sys.Shutdown()
}

// cmpProtoRun is one run handed to a driver actor.
type cmpProtoRun struct {
	msg    *wrapperspb.BytesValue
	size   int
	window int
	next   func() bool
	lat    []time.Duration // lockstep (window 1) only
	got    int
	err    error
	done   chan struct{}
}

// cmpProtoDriver sends the requests from inside an actor, as an application
// would: ctx.Request to the remote echo actor, the window kept by counting
// replies in Receive.
type cmpProtoDriver struct {
	target   *actor.PID
	run      *cmpProtoRun
	inflight int
	sentAt   time.Time
	finished bool
}

func (d *cmpProtoDriver) send(ctx actor.Context) {
	d.inflight++
	if d.run.window == 1 {
		d.sentAt = time.Now()
	}
	ctx.Request(d.target, d.run.msg)
}

func (d *cmpProtoDriver) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *cmpProtoRun:
		d.run = m
		for d.inflight < m.window && m.next() {
			d.send(ctx)
		}
		d.finishIfIdle()
	case *wrapperspb.BytesValue:
		if d.run == nil || d.finished {
			return
		}
		if d.run.window == 1 {
			d.run.lat = append(d.run.lat, time.Since(d.sentAt))
		}
		d.inflight--
		if len(m.Value) != d.run.size {
			d.run.err = errEchoMismatch
			d.finish()
			return
		}
		d.run.got++
		if d.run.next() {
			d.send(ctx)
		}
		d.finishIfIdle()
	case *actor.DeadLetterResponse:
		if d.run != nil && !d.finished {
			d.run.err = errors.New("protoactor: dead letter (the remote target is unknown or unreachable)")
			d.finish()
		}
	}
}

func (d *cmpProtoDriver) finishIfIdle() {
	if d.inflight == 0 {
		d.finish()
	}
}

func (d *cmpProtoDriver) finish() {
	if !d.finished {
		d.finished = true
		close(d.run.done)
	}
}

// drive spawns a driver actor for one run and waits for it, or until the
// client is closed (the runner's watchdog does that to a stalled run).
func (c *cmpProtoClient) drive(payload []byte, window int, next func() bool, lat bool) (*cmpProtoRun, error) {
	r := &cmpProtoRun{msg: &wrapperspb.BytesValue{Value: payload}, size: len(payload), window: window, next: next, done: make(chan struct{})}
	if lat {
		r.lat = make([]time.Duration, 0, 1<<14)
	}
	pid := c.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &cmpProtoDriver{target: c.target} }))
	c.sys.Root.Send(pid, r)
	select {
	case <-r.done:
		c.sys.Root.Stop(pid)
		return r, r.err
	case <-c.closed:
		return &cmpProtoRun{}, errCmpClosed
	}
}

func (c *cmpProtoClient) lockstep(payload []byte, next func() bool) ([]time.Duration, error) {
	r, err := c.drive(payload, 1, next, true)
	return r.lat, err
}

func (c *cmpProtoClient) pipelined(payload []byte, window int, next func() bool) (int, error) {
	r, err := c.drive(payload, window, next, false)
	return r.got, err
}
