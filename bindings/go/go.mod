module grape.dev/grape

go 1.19
