-- AlterTable
ALTER TABLE "inventory_movements" ADD COLUMN     "on_hand_after" INTEGER;

