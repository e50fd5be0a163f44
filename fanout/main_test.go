package fanout

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// zmq4 goroutines that outlive a closed socket (zmq4 v0.17.0 never
		// stops a PUB writer, nor a reader closed with unread messages).
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*qreader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*Conn).read"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*socket).connReaper"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"),
		// protoactor's process-wide background workers.
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).Shutdown.func1"),
		goleak.IgnoreAnyFunction("github.com/lithammer/shortuuid/v4.init.0"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
}
