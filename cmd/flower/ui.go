package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/registry"
	"github.com/flowerhq/flower/runserver"
)

func uiCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:      "ui",
		Usage:     "serve the pages of a workspace's runs on 127.0.0.1",
		UsageText: "flower ui [-C WORKSPACE | --machine] [--addr HOST:PORT [--token T]] [--lang L]",
		Description: `Serves an index of the runs of WORKSPACE (or, with --machine, of every
workspace flower ps lists) and each run's page, the one flower show --html
writes. The page of a run that is still going updates itself every second.

It listens on 127.0.0.1 only. Another address needs a token as well
(--token, or FLOWER_UI_TOKEN): every request must then carry it, as
?token=T once (a cookie keeps it) or as "Authorization: Bearer T". A request
from an address other than loopback is refused when no token is set.

Examples:
   flower ui                               # this workspace's runs, on a free port
   flower ui -C ~/src/app --addr 127.0.0.1:8470
   flower ui --machine                     # every workspace with a live flower`,
		Flags: []cli.Flag{
			workspaceFlag(),
			&cli.BoolFlag{Name: "machine", Usage: "serve the runs of every workspace flower ps lists, instead of one workspace"},
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:0", Usage: "listen on `HOST:PORT` (port 0: a free one)"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"FLOWER_UI_TOKEN"}, Usage: "the `TOKEN` every request must carry; required to listen beyond loopback"},
			langFlag("the pages' labels"),
		},
		Action: func(c *cli.Context) error { return uiAction(c, p) },
	}
}

func uiAction(c *cli.Context, p proc) error {
	if c.NArg() > 0 {
		return usagef("flower ui takes no arguments, got %q", c.Args().First())
	}
	lang, err := pageLang(c, p.env)
	if err != nil {
		return err
	}
	addr, token := c.String("addr"), c.String("token")
	if err := runserver.CheckBind(addr, token); err != nil {
		return usagef("%v", err)
	}
	src := runserver.Source{Lang: lang}
	if c.Bool("machine") {
		if c.IsSet("workspace") {
			return usagef("--machine and -C do not go together")
		}
		if src.PSDir, err = registry.Dir(p.env); err != nil {
			return err
		}
	} else {
		ws, err := filepath.Abs(c.String("workspace"))
		if err != nil {
			return err
		}
		if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
			return usagef("workspace %s is not a directory", ws)
		}
		src.Workspaces = []string{ws}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: runserver.Handler(&src, token, ln.Addr().String()), ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(p.stdout, "flower ui: %s\n", url)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-c.Context.Done():
		_ = srv.Close()
		return nil
	}
}
