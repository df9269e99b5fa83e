# SPDX-License-Identifier: BSD-2-Clause
# CPU-bound Perl for the unwind suite: recursion, sprintf/uc, hashes,
# regular expressions and sort with a comparator, until this process has
# used $ARGV[0] CPU seconds. Each round draws its sizes from a seeded
# generator, as cpu.py does and for its reason.
use strict;
use warnings;

sub size { my ($lo, $hi) = @_; return $lo + int(rand($hi - $lo + 1)) }

sub fib { my $n = shift; return $n < 2 ? $n : fib($n - 1) + fib($n - 2) }

sub strings {
    my $k = shift;
    my $s = 0;
    $s += length(uc(sprintf("x%d-%s", $_, "ab" x ($_ % 7)))) for 1 .. $k;
    return $s;
}

sub hashes {
    my $k = shift;
    my %h;
    $h{$_} = $_ * $_ for 1 .. $k;
    my $t = 0;
    $t += $_ for values %h;
    return $t;
}

sub regex {
    my $text = "abc123def456ghi789 " x shift;
    my $c = () = $text =~ /([a-z]+)(\d+)/g;
    return $c;
}

sub sorting {
    my @d = map { ($_ * 7919) % 1009 } 1 .. shift;
    my @s = sort { $b <=> $a } @d;
    return $s[0];
}

my $limit = $ARGV[0];
my $n = 0;
srand(1);
my ($u0, $s0) = times;
while (1) {
    my ($u, $s) = times;
    last if $u + $s - $u0 - $s0 >= $limit;
    $n += fib(size(12, 15)) + strings(size(1000, 3000)) + hashes(size(1500, 4500)) +
        regex(size(50, 150)) + sorting(size(1000, 3000));
}
print $n % 1000, "\n";
