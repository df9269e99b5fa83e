/* SPDX-License-Identifier: BSD-2-Clause */
/* core/lru: the intrusive list every bounded cache orders its entries by. */
#include <criterion/criterion.h>

#include "core/lru.h"

struct item {
	int id;
	struct lru_node node;
};

Test(lru, push_touch_unlink_keep_the_order)
{
	struct item it[3] = { { .id = 0 }, { .id = 1 }, { .id = 2 } };
	struct lru l = { 0 };

	cr_assert_null(LRU_ENTRY(l.tail, struct item, node));
	for (int i = 0; i < 3; i++)
		lru__push(&l, &it[i].node);
	/* Most recent first: 2 1 0. */
	cr_assert_eq(LRU_ENTRY(l.head, struct item, node)->id, 2);
	cr_assert_eq(LRU_ENTRY(l.tail, struct item, node)->id, 0);
	lru__touch(&l, &it[0].node);            /* 0 2 1 */
	cr_assert_eq(LRU_ENTRY(l.head, struct item, node)->id, 0);
	cr_assert_eq(LRU_ENTRY(l.tail, struct item, node)->id, 1);
	lru__touch(&l, &it[0].node);            /* at the head already */
	cr_assert_eq(LRU_ENTRY(l.head->next, struct item, node)->id, 2);
	lru__unlink(&l, &it[2].node);           /* 0 1 */
	cr_assert_eq(l.head->next, &it[1].node);
	cr_assert_eq(l.tail->prev, &it[0].node);
	lru__unlink(&l, &it[0].node);
	lru__unlink(&l, &it[1].node);
	cr_assert_null(l.head);
	cr_assert_null(l.tail);
}
