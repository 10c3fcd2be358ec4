package main

import (
	"github.com/urfave/cli/v2"

	"github.com/flowerhq/flower/console"
)

// langFlag is --lang of every command with labels for a person: the status
// lines, the demo's, the run page's. It has no value of its own: a command
// reads it with langOf, which falls back to the locale.
func langFlag(what string) cli.Flag {
	return &cli.StringFlag{Name: "lang", Usage: what + ": zh or en",
		DefaultText: "from the locale: zh for zh_*, else en (LC_ALL, LC_MESSAGES, LANG)"}
}

// langOf is --lang as given to the command or before it (flower --lang en
// show), else the locale's language in env (console.LocaleLang). File names
// and markers (交接-<step>.md, [降级:交接没写成]) never follow it.
func langOf(c *cli.Context, env []string) string {
	for _, cc := range c.Lineage() {
		if cc.IsSet("lang") {
			return cc.String("lang")
		}
	}
	return string(console.LocaleLang(env))
}
