# map_share.awk - whose bytes are in a linked image, from GNU ld's map file
# (-Wl,-Map=...). Run with -v lib=PATH, the library's object as the link
# command named it.
#
# Every input section the link kept is listed under "Linker script and
# memory map" with its size and the object it came from; the sections the
# link dropped (--gc-sections) are listed before that line and ignored.
# Each kept section counts for its origin:
#     lib     the object named by `lib` (coll.h's implementation)
#     libgcc  members of libgcc.a (the compiler's arithmetic helpers)
#     other   everything else (the program, the runtime, start-up)
# and for one of flash (code and constants: .text*, .rodata*, .srodata*,
# unwind tables, the vector table), .data (.data*, .sdata*) or .bss
# (.bss*, .sbss*, COMMON). Padding between sections (*fill*) and
# non-allocated sections (debug, attributes) count for nobody.
#
# Output: three lines "origin text data bss", for lib, libgcc and other.
function add(name, size, file,    o, k) {
    if (file == lib) o = "lib"
    else if (file ~ /libgcc\.a\(/) o = "libgcc"
    else o = "other"
    if (name ~ /^\.(text|rodata|srodata|vectors|ARM\.exidx|ARM\.extab|glue_7|glue_7t|vfp11_veneer|v4_bx|iplt)(\.|$)/ ||
        name ~ /^\.text/) k = "text"
    else if (name ~ /^\.(data|sdata|tdata)(\.|$)/) k = "data"
    else if (name ~ /^\.(bss|sbss|tbss)(\.|$)/ || name == "COMMON") k = "bss"
    else return
    sum[o, k] += size
}
/^Linker script and memory map/ { on = 1; next }
!on { next }
# An input section: one space, then its name; the address, size and file
# follow on the same line, or on the next one when the name is long.
/^ (\.|COMMON)/ {
    if (NF >= 4 && $2 ~ /^0x/ && $3 ~ /^0x/) { add($1, strtonum_hex($3), $4); pending = "" }
    else if (NF == 1) pending = $1
    else pending = ""
    next
}
pending != "" && NF == 3 && $1 ~ /^0x/ && $2 ~ /^0x/ { add(pending, strtonum_hex($2), $3); pending = ""; next }
{ pending = "" }
END {
    split("lib libgcc other", os, " ")
    for (i = 1; i <= 3; i++)
        print os[i], sum[os[i], "text"] + 0, sum[os[i], "data"] + 0, sum[os[i], "bss"] + 0
}
# POSIX awk has no hex literals: convert by hand.
function strtonum_hex(s,    i, c, v) {
    v = 0
    s = tolower(s)
    sub(/^0x/, "", s)
    for (i = 1; i <= length(s); i++) {
        c = index("0123456789abcdef", substr(s, i, 1)) - 1
        if (c < 0) break
        v = v * 16 + c
    }
    return v
}
