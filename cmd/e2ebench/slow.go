package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowerhq/flower/scriptedapi"
)

// idleFigures: flower's CPU while the harness waits on a slow model.
type idleFigures struct {
	wait time.Duration // how long flower was watched
	cpu  time.Duration // flower's CPU in that time, every thread's
}

func (f idleFigures) share() float64 { return float64(f.cpu) / float64(f.wait) }

// idle runs flower on a one-turn task whose model takes b.slow to answer,
// and reads flower's CPU time, to the nanosecond, from the moment the
// request arrives to just before the answer.
func (b *bench) idle(ctx context.Context) (idleFigures, error) {
	var pid atomic.Int64
	var mu sync.Mutex
	var f idleFigures
	var done sync.WaitGroup
	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
		if r.Kind != scriptedapi.KindMain {
			return scriptedapi.Harmless(r)
		}
		p := int(pid.Load())
		cpu0, t0 := threadsCPU(p), time.Now()
		done.Add(1)
		time.AfterFunc(b.slow-100*time.Millisecond, func() {
			defer done.Done()
			mu.Lock()
			f.cpu, f.wait = threadsCPU(p)-cpu0, time.Since(t0)
			mu.Unlock()
		})
		return scriptedapi.Reply{Text: "ok", Usage: usage(20_000), Delay: b.slow}
	})
	if err != nil {
		return f, err
	}
	defer srv.Close()
	ws := b.dir("idle")
	p, err := b.flowerRun(ctx, []string{"-C", ws, "--run-dir", filepath.Join(ws, "run"), "-q", "Say ok.", "--", "--allowedTools", "Bash"},
		append(b.env(srv), "FLOWER_HARNESS="+b.harness), func(p int) { pid.Store(int64(p)) })
	if err != nil {
		return f, err
	}
	done.Wait()
	if p.code != 0 {
		return f, fmt.Errorf("flower exited %d:\n%s", p.code, p.output)
	}
	mu.Lock()
	defer mu.Unlock()
	if f.wait == 0 {
		return f, fmt.Errorf("the slow request never came:\n%s", p.output)
	}
	return f, nil
}

// threadsCPU is the CPU time every thread of pid has run, from
// /proc/<pid>/task/*/schedstat (nanoseconds, where /proc/<pid>/stat counts
// in 10 ms ticks).
func threadsCPU(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, _ := os.ReadDir(dir)
	var sum time.Duration
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}
