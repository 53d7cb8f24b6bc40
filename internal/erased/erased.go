// Package erased holds the one unsafe calling contract of the executor: a
// behaviour of type func(A, M) R, for pointer types A and M and a one-byte
// result R, is stored as a single pointer and
// called through the erased type Func.
//
// A Go func value is a pointer to a closure record, and func(*A, *M) R and
// func(unsafe.Pointer, unsafe.Pointer) R have the same calling convention
// (two pointer arguments, one result of R's size). Erase and Call are only
// sound when A and M are pointer types and the pointers passed to Call are of
// exactly the types the function was erased with, which is why this package is internal: the
// executor pairs every erased behaviour with the actor and message it was
// typed for (see executor.Send), and nothing outside this module can call
// Call.
package erased

import "unsafe"

// Func is the erased type under which behaviours are called.
type Func = func(self, msg unsafe.Pointer) uint8

// Erase returns fn as a single pointer, to be called later with Call. A and
// M must be pointer types (the executor's typed entry points constrain them
// so); R is the executor's one-byte Allocation.
func Erase[A, M any, R ~uint8](fn func(A, M) R) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&fn))
}

// Call calls an erased behaviour. self and msg must point to values of the
// types A and M it was erased with.
func Call(fn, self, msg unsafe.Pointer) uint8 {
	f := *(*Func)(unsafe.Pointer(&fn))
	return f(self, msg)
}

// Data returns the data word of an interface value that holds a pointer.
func Data(x any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&x))[1]
}
