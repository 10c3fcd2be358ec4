module github.com/flowerhq/flower

go 1.26.8

require github.com/tidwall/gjson v1.20.3

require (
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
)
