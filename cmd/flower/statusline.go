package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/statusline"
)

// statusLineCommand is run by the harness (never by a person).
func statusLineCommand(p proc) *cli.Command {
	return &cli.Command{
		Name:   "statusline",
		Hidden: true,
		Usage:  "flower's segment of the harness's status line (run by the harness)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state", Usage: "the run's live state file"},
			&cli.StringFlag{Name: "lang", Value: "zh", Usage: "zh or en"},
			&cli.StringFlag{Name: "theirs", Usage: "the person's own status line command, run first"},
		},
		Action: func(c *cli.Context) error {
			lang, err := console.ParseLang(c.String("lang"))
			if err != nil {
				lang = console.LangZh
			}
			statusline.Print(p.stdin, p.stdout, c.String("state"), lang, c.String("theirs"), time.Now())
			return nil
		},
	}
}
