package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// envWatchParentHelper makes the test binary watchParent's subject: it
// watches its parent, writes what it saw to the named file, and exits.
const envWatchParentHelper = "FLOWER_TEST_WATCH_PARENT"

func watchParentHelper() {
	out := os.Getenv(envWatchParentHelper)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	saw := make(chan error, 1)
	go watchParent(ctx, func(err error) { saw <- err })
	os.WriteFile(out+".ready", nil, 0o600)
	var said string
	select {
	case err := <-saw:
		said = "gone: " + err.Error()
	case <-ctx.Done():
		said = "not seen"
	}
	// Written beside and renamed: the test reads the file as soon as it
	// exists, and must never read it half written.
	os.WriteFile(out+".tmp", []byte(said), 0o600)
	os.Rename(out+".tmp", out)
	os.Exit(0)
}

// TestWatchParentSeesTheParentExit: an application that dies (here a
// shell, SIGKILLed) is seen by the flower it started, at once and without
// anything written to it.
func TestWatchParentSeesTheParentExit(t *testing.T) {
	out := filepath.Join(t.TempDir(), "seen")
	// The shell stays the helper's parent: it waits for it.
	sh := exec.Command("/bin/sh", "-c", `"$0" -test.run='^$'; exit 0`, os.Args[0])
	sh.Env = append(os.Environ(), envWatchParentHelper+"="+out)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, out+".ready")
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the parent was seen gone while it lives")
	}
	start := time.Now()
	if err := sh.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	sh.Wait()
	b := waitFile(t, out)
	if got := string(b); !strings.HasPrefix(got, "gone: parent ") {
		t.Fatalf("the helper wrote %q, want the parent seen gone", got)
	}
	t.Logf("seen %v after the kill", time.Since(start))
}

// TestWatchParentReturnsWhenTheRunEnds: a run that ends first leaves no
// watcher behind and reports nothing.
func TestWatchParentReturnsWhenTheRunEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var calls int
	go func() {
		defer close(done)
		watchParent(ctx, func(error) { calls++ })
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("watchParent did not return after its context ended")
	}
	if calls != 0 {
		t.Errorf("gone called %d times, with the parent alive", calls)
	}
}

// waitFile waits for path to exist and gives its content.
func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
