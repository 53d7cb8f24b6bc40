package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
)

// hogEnv marks a hog child: this binary again, burning one CPU until its
// standard input closes.
const hogEnv = "BENCHRUN_HOG"

// hogMain is a hog child's whole life: one goroutine spins while another
// waits for the end of standard input, which comes when the parent closes
// the pipe or dies, so a hog never outlives its benchrun.
func hogMain() {
	runtime.GOMAXPROCS(1) // the reader gets the processor by preemption
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	var x uint64
	for {
		x = x*6364136223846793005 + 1442695040888963407 // busy: no system call, no allocation
		if x == 0 {
			runtime.Gosched() // never taken; keeps x live
		}
	}
}

// hogs are the CPU-burning children started by -hogs.
type hogs struct {
	cmds  []*exec.Cmd
	pipes []io.WriteCloser
}

// startHogs starts n hog children of exe: a noisy neighbour, other load on
// the machine competing with every run for the CPUs.
func startHogs(exe string, n int) (*hogs, error) {
	h := &hogs{}
	for range n {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), hogEnv+"=1")
		in, err := cmd.StdinPipe()
		if err != nil {
			h.stop()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			h.stop()
			return nil, fmt.Errorf("starting a hog: %w", err)
		}
		h.cmds, h.pipes = append(h.cmds, cmd), append(h.pipes, in)
	}
	return h, nil
}

// stop ends the hogs (closing their standard input) and waits for them.
func (h *hogs) stop() {
	for _, p := range h.pipes {
		_ = p.Close()
	}
	for _, c := range h.cmds {
		_ = c.Wait()
	}
	h.cmds, h.pipes = nil, nil
}
