# SPDX-License-Identifier: BSD-2-Clause
# CPU-bound Perl for the unwind suite: recursion, sprintf/uc, hashes,
# regular expressions and sort with a comparator, until this process has
# used $ARGV[0] CPU seconds.
use strict;
use warnings;

sub fib { my $n = shift; return $n < 2 ? $n : fib($n - 1) + fib($n - 2) }

sub strings {
    my $s = 0;
    $s += length(uc(sprintf("x%d-%s", $_, "ab" x ($_ % 7)))) for 1 .. 2000;
    return $s;
}

sub hashes {
    my %h;
    $h{$_} = $_ * $_ for 1 .. 3000;
    my $t = 0;
    $t += $_ for values %h;
    return $t;
}

sub regex {
    my $text = "abc123def456ghi789 " x 100;
    my $c = () = $text =~ /([a-z]+)(\d+)/g;
    return $c;
}

sub sorting {
    my @d = map { ($_ * 7919) % 1009 } 1 .. 2000;
    my @s = sort { $b <=> $a } @d;
    return $s[0];
}

my $limit = $ARGV[0];
my $n = 0;
my ($u0, $s0) = times;
while (1) {
    my ($u, $s) = times;
    last if $u + $s - $u0 - $s0 >= $limit;
    $n += fib(14) + strings() + hashes() + regex() + sorting();
}
print $n % 1000, "\n";
