package actors

import (
	"testing"
	"unsafe"
)

// The adapter adds no memory per actor: an actor's Context is its cell
// (the object protoactor holds per incarnation), and it stays within the
// 64-byte size class the cell had before the Context existed.
func TestContext_IsTheCellAndFitsItsSizeClass(t *testing.T) {
	if c, x := unsafe.Sizeof(cell{}), unsafe.Sizeof(Context{}); c != x || x > 64 {
		t.Fatalf("cell %d B, Context %d B: want the same, at most 64", c, x)
	}
}
