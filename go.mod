module github.com/flowerhq/flower

go 1.26.8

require (
	github.com/creack/pty v1.1.24
	github.com/fsnotify/fsnotify v1.10.1
	github.com/tidwall/gjson v1.20.3
	github.com/urfave/cli/v2 v2.27.7
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
)
