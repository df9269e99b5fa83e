/* SPDX-License-Identifier: BSD-2-Clause */
#include "core/lru.h"

void lru__push(struct lru *l, struct lru_node *n)
{
	n->prev = NULL;
	n->next = l->head;
	if (l->head)
		l->head->prev = n;
	l->head = n;
	if (!l->tail)
		l->tail = n;
}

void lru__unlink(struct lru *l, struct lru_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
	n->prev = n->next = NULL;
}

void lru__touch(struct lru *l, struct lru_node *n)
{
	if (l->head == n)
		return;
	lru__unlink(l, n);
	lru__push(l, n);
}
