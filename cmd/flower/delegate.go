package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// temporalBinary is the name of flower built with the Temporal client.
const temporalBinary = "flower-temporal"

// envDelegated marks a command line flower handed to flower-temporal. A
// flower without the Temporal client that finds it set was itself started
// as flower-temporal (a copy of the wrong build): it stops there instead
// of running itself again and again.
const envDelegated = "FLOWER_DELEGATED"

// exitedWith is the end of a command another process ran in flower's
// place: that process said what it had to say, and flower exits with its
// code.
type exitedWith struct{ code int }

func (e exitedWith) Error() string {
	return fmt.Sprintf("%s exited with status %d", temporalBinary, e.code)
}

// findTemporalBinary looks for flower-temporal beside this executable,
// then on PATH.
func findTemporalBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			p := filepath.Join(filepath.Dir(self), temporalBinary)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath(temporalBinary); err == nil {
		return p, nil
	}
	return "", usagef("this command needs %s, flower built with the Temporal client, beside this flower or on PATH: "+
		"`make build` builds bin/%s; or `go build -tags temporal -o %s ./cmd/flower`", temporalBinary, temporalBinary, temporalBinary)
}

// runTemporalBinary runs the command line flower was given with
// flower-temporal. A real process becomes it (p.exec is execve: same pid,
// same signals); in a test it runs as a child.
func runTemporalBinary(p proc) error {
	if self, _ := os.Executable(); slices.Contains(p.env, envDelegated+"=1") {
		return fmt.Errorf("%s (%s) was built without the Temporal client: build it with -tags temporal (make build does)", temporalBinary, self)
	}
	path, err := findTemporalBinary()
	if err != nil {
		return err
	}
	argv := append([]string{path}, p.argv[1:]...)
	p.env = append(p.env[:len(p.env):len(p.env)], envDelegated+"=1")
	if p.exec != nil {
		return fmt.Errorf("run %s: %w", path, p.exec(path, argv, p.env))
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = p.stdin, p.stdout, p.stderr, p.env
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return exitedWith{ee.ExitCode()}
	}
	return fmt.Errorf("run %s: %w", path, err)
}
